package example.orders;

/** An order as it travels on the "orders" topic: key = id, value = "id,cents". */
public record Order(String id, long cents) {

    public static Order parse(String value) {
        int comma = value.indexOf(',');
        if (comma < 0) {
            throw new IllegalArgumentException("not an order: " + value);
        }
        return new Order(value.substring(0, comma), Long.parseLong(value.substring(comma + 1)));
    }

    public String encode() {
        return id + "," + cents;
    }
}
