#!/usr/bin/env node
// The kafkajs admin client against a running FakeCluster, driven by tests/clients/test_kafkajs_admin.py.
//
//   node admin.js <bootstrap servers>
//
// The line protocol of groups.js: one JSON command per stdin line, one JSON reply per command.
// "admin" calls admin[op](...args) and replies {"result": ...} (Buffers as their utf8 text), or
// {"failure": {...}} when kafkajs throws (the error's name, type, code and message); "produce"
// sends messages with a plain producer; "consume" runs a consumer of a group until it has read
// n messages, committing them, then disconnects (leaving the group Empty with its offsets).
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

// kafkajs's admin.setOffsets (which resetOffsets, and fetchOffsets with resolveOffsets, call too)
// runs a consumer of the group with every partition paused and returns after its first fetch
// loop, which with nothing to fetch is a sleep of the consumer's maxWaitTimeInMs: 5 s by default,
// and the admin gives no way to set it. Before kafkajs loads, its consumer factory is wrapped to
// default that wait to 100 ms, so each of those calls does not idle 5 s. The requests it sends
// (join, sync, the seeked offsets' commit, leave) are the same.
const consumerModule = require.resolve('kafkajs/src/consumer')
const createConsumer = require(consumerModule)
require.cache[consumerModule].exports = options => createConsumer({ maxWaitTimeInMs: 100, ...options })

const { logLevel: LEVELS, Partitioners } = require('kafkajs')

const WATCHDOG_MS = Number(process.env.SCENARIO_TIMEOUT_MS || 100000)
const LOG_LEVEL = LEVELS[(process.env.KAFKAJS_LOG_LEVEL || 'WARN').toUpperCase()] ?? LEVELS.WARN
const RETRY = { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 }
const { kafkaClient, describeKafkaError: describe, until, serve } = require('./lines')

// kafkajs results as JSON: Buffers become text, BigInts strings
function plain(value) {
  if (value == null) return value
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return value.map(plain)
  if (typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = plain(v)
    return out
  }
  return value
}

const bootstrap = process.argv[2]
if (!bootstrap) throw new Error('usage: admin.js <bootstrap servers>')

const kafka = kafkaClient('fakebroker-kafkajs-admin', bootstrap, RETRY, LOG_LEVEL)

let admin = null
let producer = null

const commands = {
  async admin({ op, args }) {
    if (!admin) {
      admin = kafka.admin({ retry: RETRY })
      await admin.connect()
    }
    try {
      return { result: plain(await admin[op](...(args || []))) ?? null }
    } catch (e) {
      return { failure: describe(e) }
    }
  },

  async produce({ topic, messages }) {
    if (!producer) {
      producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, retry: RETRY })
      await producer.connect()
    }
    return { result: plain(await producer.send({ topic, messages, acks: -1 })) }
  },

  async consume({ groupId, topic, n }) {
    // maxWaitTimeInMs: disconnect waits out the fetch in flight, a long poll of that long once all is read
    const consumer = kafka.consumer({ groupId, retry: RETRY, sessionTimeout: 10000, rebalanceTimeout: 10000,
      maxWaitTimeInMs: 500 })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    let seen = 0
    await consumer.run({ autoCommit: true, autoCommitThreshold: 1, eachMessage: async () => { seen += 1 } })
    await until(`${n} messages`, 30000, () => seen >= n)
    await consumer.disconnect()
    return { seen }
  },

  async exit() {
    if (admin) await admin.disconnect()
    if (producer) await producer.disconnect()
    return { ok: true }
  },
}

serve('admin.js', commands, { watchdogMs: WATCHDOG_MS, describeError: describe })
