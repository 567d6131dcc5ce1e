// The code under test: an order-processing consumer as a service team would write it with
// kafkajs 2.2.4. Each order (a JSON message) goes to `handle`, and its offset is committed
// before the next message.
//
// What consumer.test.js taught it: kafkajs keeps the group coordinator it found when it
// joined. When the coordinator moves (a broker restart, a leader election) while the old one
// stays up, every commit answers NOT_COORDINATOR until the consumer's retries run out; then
// kafkajs restarts the consumer, which finds the new coordinator and rejoins. That restart
// redelivers the order whose commit never made it, so the service remembers, per partition,
// the last offset it handled and skips anything at or below it. The retry settings below
// bound the outage (a few seconds; kafkajs's defaults make it far longer). And a commit that
// a rejoin overtook (ILLEGAL_GENERATION) would stop a kafkajs consumer for good, so the
// service lets it go: the redelivered order's commit replaces it.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const GENERATION_GONE = new Set(['ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'REBALANCE_IN_PROGRESS'])
const RETRY = { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 }

class OrderConsumer {
  /**
   * @param {object} o
   * @param {string[]} o.brokers      bootstrap servers
   * @param {string} o.groupId
   * @param {string} o.topic
   * @param {(order: object, where: {partition: number, offset: string}) => Promise<void>|void} o.handle
   * @param {string} [o.clientId]
   * @param {object} [o.consumer]     extra kafkajs consumer settings
   */
  constructor ({ brokers, groupId, topic, handle, clientId = 'order-service', consumer = {} }) {
    this.topic = topic
    this.handle = handle
    this.handledUpTo = new Map() // partition -> last offset handled (BigInt)
    this.joins = [] // this member's assignment at each (re)join
    this.crashes = [] // errors kafkajs restarted the consumer for
    this.skipped = 0 // redeliveries skipped
    this.kafka = new Kafka({
      clientId,
      brokers,
      connectionTimeout: 3000,
      requestTimeout: 10000,
      retry: RETRY,
      logLevel: logLevel[(process.env.KAFKAJS_LOG_LEVEL || 'NOTHING').toUpperCase()] ?? logLevel.NOTHING
    })
    this.consumer = this.kafka.consumer({
      groupId,
      sessionTimeout: 6000,
      rebalanceTimeout: 10000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
      retry: RETRY,
      ...consumer
    })
    const { GROUP_JOIN, CRASH } = this.consumer.events
    this.consumer.on(GROUP_JOIN, e => this.joins.push(e.payload.memberAssignment))
    this.consumer.on(CRASH, e => this.crashes.push(String(e.payload.error)))
  }

  async start () {
    await this.consumer.connect()
    await this.consumer.subscribe({ topics: [this.topic], fromBeginning: true })
    await this.consumer.run({
      autoCommit: false, // commit each order ourselves, once it is handled
      eachMessage: ({ topic, partition, message }) => this.onMessage(topic, partition, message)
    })
  }

  async onMessage (topic, partition, message) {
    const offset = BigInt(message.offset)
    const done = this.handledUpTo.get(partition)
    if (done !== undefined && offset <= done) {
      this.skipped++ // handled already; its commit was lost to a restart or a rebalance
    } else {
      await this.handle(JSON.parse(message.value.toString()), { partition, offset: message.offset })
      this.handledUpTo.set(partition, offset)
    }
    try {
      await this.consumer.commitOffsets([{ topic, partition, offset: (offset + 1n).toString() }])
    } catch (err) {
      // The group moved to a new generation while this order was handled (a rejoin after a
      // leader change, say). kafkajs would stop this consumer for good on such a refusal; the
      // order is handled, and the new generation's redelivery of it commits it (skipped above).
      if (GENERATION_GONE.has(rootCause(err).type)) return
      throw err
    }
  }

  async stop () {
    await this.consumer.disconnect() // leaves the group cleanly
  }
}

/** The error kafkajs wrapped (retry errors keep the protocol error as `cause`). */
function rootCause (err) {
  let e = err
  for (let depth = 0; e.cause && depth < 10; depth++) e = e.cause
  return e
}

module.exports = { OrderConsumer }
