#!/usr/bin/env bash
# The control endpoint driven with curl alone, as a shell-scripted test suite would drive it.
# Run by tests/clients/test_control_curl.py against `fakebroker serve --brokers 2 --control-port 0`:
#
#   CONTROL_URL=http://127.0.0.1:P CONTROL_TOKEN=T BOOTSTRAP=127.0.0.1:B0,... KCAT=kcat control_curl.sh
#
# JSON is checked with python3 (jq may not be installed). Exits non-zero at the first failed check.
set -euo pipefail
: "${CONTROL_URL:?}" "${CONTROL_TOKEN:?}" "${BOOTSTRAP:?}" "${KCAT:?}"
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# call METHOD PATH [JSON]: sets STATUS and BODY
call() {
    local method=$1 path=$2 data=${3-}
    local args=(-sS --max-time 20 -X "$method" -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $CONTROL_TOKEN")
    if [ -n "$data" ]; then args+=(-H 'Content-Type: application/json' --data "$data"); fi
    STATUS=$(curl "${args[@]}" "$CONTROL_URL$path")
    BODY=$(cat "$tmp/body")
}
expect() { [ "$STATUS" = "$1" ] || fail "expected HTTP $1, got $STATUS: $BODY"; }
# check EXPR: a Python expression over j, the last JSON body
check() {
    "$PY" -c 'import json, sys; j = json.loads(sys.argv[1]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$BODY" "$1" \
        || fail "not true: $1 on $BODY"
}
field() { "$PY" -c 'import json, sys; print(eval(sys.argv[2], {"j": json.loads(sys.argv[1])}))' "$BODY" "$1"; }

echo "1. no token, wrong token: 401"
STATUS=$(curl -sS --max-time 20 -o "$tmp/body" -w '%{http_code}' "$CONTROL_URL/faults"); BODY=$(cat "$tmp/body")
expect 401; check '"token" in j["error"]'
STATUS=$(curl -sS --max-time 20 -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer nope" -X POST "$CONTROL_URL/brokers/0/stop")
BODY=$(cat "$tmp/body"); expect 401

echo "2. /openapi.json is open"
STATUS=$(curl -sS --max-time 20 -o "$tmp/body" -w '%{http_code}' "$CONTROL_URL/openapi.json"); BODY=$(cat "$tmp/body")
expect 200; check '"/faults/{id}" in j["paths"] and "delete" in j["paths"]["/faults/{id}"]'

echo "3. create a topic"
call POST /topics '{"name": "curl-orders", "partitions": 2, "replication_factor": 2}'
expect 201; check 'len(j["partitions"]) == 2 and all(len(p["replicas"]) == 2 for p in j["partitions"])'
call POST /topics '{"name": "curl-orders", "partitions": 2}'
expect 409

echo "4. add a fault, list it; a misspelt error is refused"
call POST /faults '{"api": "Produce", "topic": "curl-orders", "error": "NOT_ENOUGH_REPLICA"}'
expect 400; check '"NOT_ENOUGH_REPLICAS" in j["error"]'
call POST /faults '{"api": "Produce", "topic": "curl-orders", "error": "NOT_ENOUGH_REPLICAS", "times": 1}'
expect 201; check 'j["fired"] == 0 and j["active"]'
rule=$(field 'j["id"]')
call GET /faults
expect 200; check "[r['id'] for r in j['faults']] == [$rule] and j['faults'][0]['error'] == 'NOT_ENOUGH_REPLICAS'"

echo "5. kcat's produce meets the fault once, retries, and the record lands"
printf 'k1:hello\n' | "$KCAT" -b "$BOOTSTRAP" -P -t curl-orders -p 0 -K : -X retry.backoff.ms=50 2>"$tmp/kcat.err" \
    || fail "kcat produce failed: $(cat "$tmp/kcat.err")"
call GET "/faults/$rule"
expect 200; check 'j["fired"] == 1 and j["active"] is False'
got=$("$KCAT" -b "$BOOTSTRAP" -C -t curl-orders -p 0 -o beginning -e -q -f '%k=%s\n')
[ "$got" = "k1=hello" ] || fail "consumed '$got'"

echo "6. time does not move on a real clock"
call GET /clock
expect 200; check 'j["virtual"] is False'
call POST /clock/advance '{"seconds": 5}'
expect 409

echo "7. stop broker 0: its partitions move to broker 1; start it again"
call POST /brokers/0/stop
expect 200; check 'j["alive"] is False'
call GET /brokers
check '[b["alive"] for b in j["brokers"]] == [False, True]'
call GET /topics/curl-orders
check 'all(p["leader"] == 1 for p in j["partitions"])'
printf 'k2:while-down\n' | "$KCAT" -b "$BOOTSTRAP" -P -t curl-orders -p 0 -K : 2>"$tmp/kcat.err" \
    || fail "kcat produce with broker 0 down failed: $(cat "$tmp/kcat.err")"
call POST /brokers/0/start
expect 200; check 'j["alive"] is True'
call GET /brokers
check '[b["alive"] for b in j["brokers"]] == [True, True]'
call GET '/events?kind=broker_stopped,broker_started'
check '[(e["kind"], e["broker"]) for e in j["events"]][-2:] == [("broker_stopped", 0), ("broker_started", 0)]'
got=$("$KCAT" -b "$BOOTSTRAP" -C -t curl-orders -p 0 -o beginning -e -q -f '%k=%s\n' | tr '\n' ' ')
[ "$got" = "k1=hello k2=while-down " ] || fail "consumed '$got'"

echo "8. delete the fault"
call DELETE "/faults/$rule"
expect 200; check 'j["fired"] == 1'
call GET /faults
check 'j["faults"] == []'
call DELETE "/faults/$rule"
expect 404

echo "all control endpoint checks passed"
