#!/usr/bin/env node
// kafkajs transactions against a running FakeCluster, driven by tests/clients/test_kafkajs_transactions.py.
//
//   node transactions.js <bootstrap servers>
//
// The same line protocol as groups.js: one JSON command per stdin line ({"id": 1, "cmd": "begin", ...}),
// one JSON reply per command on stdout ({"type": "reply", "id": 1, ...}, or with "error" when the
// command itself broke). A transactional call that the broker refuses is not a broken command: its
// reply carries "failure" (the kafkajs error's name, type, code, retriable flag and cause) so the
// test can assert what kafkajs surfaced. Other stdout lines are notes ("crash", "txn_failed", ...).
//
// Producers are kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 }) and
// their transaction(); readers and exactly-once members are consumers with readUncommitted: false
// (read_committed). Records are key "k<i>", value "v<i>" on partition i % partitions; the
// exactly-once members write key "k<i>", value "t-v<i>" to the same partition of the output.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const { logLevel: LEVELS, Partitioners } = require('kafkajs')

const WATCHDOG_MS = Number(process.env.SCENARIO_TIMEOUT_MS || 100000)
const LOG_LEVEL = LEVELS[(process.env.KAFKAJS_LOG_LEVEL || 'WARN').toUpperCase()] ?? LEVELS.WARN
const RETRY = { retries: 8, initialRetryTime: 100, maxRetryTime: 1000 }
const { out, sleep, str, kafkaClient, describeKafkaError: describe, until, serve } = require('./lines')

// ---------------------------------------------------------------------------------------------
const bootstrap = process.argv[2]
if (!bootstrap) throw new Error('usage: transactions.js <bootstrap servers>')

const kafka = kafkaClient('fakebroker-kafkajs-txn', bootstrap, RETRY, LOG_LEVEL)

const producers = {} // name -> { producer, txn }
const members = {} // name -> exactly-once member state
let plain = null

function transactional(transactionalId) {
  return kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner, retry: RETRY, transactionTimeout: 30000 })
}

async function tryTo(fn) {
  try {
    return { ok: true, ...((await fn()) || {}) }
  } catch (e) {
    return { ok: false, failure: describe(e) }
  }
}

const metadata = meta => meta.map(m => ({ partition: m.partition, errorCode: m.errorCode, baseOffset: Number(m.baseOffset) }))

// ---------------------------------------------------------------------------------------------
const COMMANDS = {
  // Non-transactional input: records first..first+n-1.
  async produce({ topic, first = 0, n, partitions }) {
    if (!plain) {
      plain = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
      await plain.connect()
    }
    const messages = []
    for (let i = first; i < first + n; i++) messages.push({ key: `k${i}`, value: `v${i}`, partition: i % partitions })
    return { sent: metadata(await plain.send({ topic, acks: -1, messages })) }
  },

  // A transactional producer `name` for `transactionalId` (InitProducerId happens at its first transaction()).
  async open({ name, transactionalId }) {
    if (producers[name]) throw new Error(`producer ${name} exists`)
    const producer = transactional(transactionalId)
    await producer.connect()
    producers[name] = { producer, txn: null }
    return {}
  },

  // producer.transaction(): the first one sends InitProducerId (fencing an older instance).
  async begin({ name }) {
    const entry = producers[name]
    return tryTo(async () => {
      entry.txn = await entry.producer.transaction()
    })
  },

  // txn.send({ topic, messages }) with keys/values/partitions given explicitly.
  async send({ name, topic, messages }) {
    const { txn } = producers[name]
    return tryTo(async () => ({ sent: metadata(await txn.send({ topic, acks: -1, messages })) }))
  },

  async sendOffsets({ name, consumerGroupId, topics }) {
    const { txn } = producers[name]
    return tryTo(() => txn.sendOffsets({ consumerGroupId, topics }))
  },

  async commit({ name }) {
    const entry = producers[name]
    return tryTo(async () => {
      await entry.txn.commit()
      return { active: entry.txn.isActive() }
    })
  },

  async abort({ name }) {
    const entry = producers[name]
    return tryTo(async () => {
      await entry.txn.abort()
      return { active: entry.txn.isActive() }
    })
  },

  async close({ name }) {
    await producers[name].producer.disconnect()
    delete producers[name]
    return {}
  },

  // Read `topic` from the beginning with a read_committed consumer in a fresh group, until
  // `expect` records arrived and then `settleMs` more (to catch anything that should not be
  // there), or `timeoutMs`. Returns [partition, offset, key, value] in arrival order.
  async read({ topic, groupId, expect, settleMs = 1000, timeoutMs = 20000 }) {
    const consumer = kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 100, retry: RETRY })
    const records = []
    await consumer.connect()
    try {
      await consumer.subscribe({ topics: [topic], fromBeginning: true })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          records.push([partition, Number(message.offset), str(message.key), str(message.value)])
        },
      })
      await until(`${expect} records of ${topic}`, timeoutMs, () => records.length >= expect).catch(() => {})
      await sleep(settleMs)
    } finally {
      await consumer.disconnect()
    }
    return { records }
  },

  // An exactly-once member: a read_committed consumer of `input` in `groupId` plus a transactional
  // producer; each batch becomes one transaction: the transformed records to the same partition
  // of `output`, and (txn.sendOffsets) the batch's next offset for the group; then commit.
  async startMember({ name, groupId, transactionalId, input, output, sessionTimeout = 6000,
    rebalanceTimeout = 10000, heartbeatInterval = 300, maxBytesPerPartition = 2048 }) {
    if (members[name]) throw new Error(`member ${name} exists`)
    const consumer = kafka.consumer({ groupId, readUncommitted: false, sessionTimeout, rebalanceTimeout,
      heartbeatInterval, maxWaitTimeInMs: 100, maxBytesPerPartition, retry: RETRY })
    const producer = transactional(transactionalId)
    const m = { consumer, producer, commits: 0, records: 0, failures: [], joins: 0, assignment: null, running: true }
    members[name] = m
    const { GROUP_JOIN, CRASH } = consumer.events
    consumer.on(GROUP_JOIN, ({ payload }) => {
      m.joins++
      m.assignment = payload.memberAssignment
      out({ type: 'joined', name, memberId: payload.memberId, assignment: payload.memberAssignment })
    })
    consumer.on(CRASH, ({ payload }) => out({ type: 'crash', name, error: describe(payload.error), restart: payload.restart }))
    await producer.connect()
    await consumer.connect()
    await consumer.subscribe({ topics: [input], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, isRunning, isStale }) => {
        if (!batch.messages.length || !isRunning() || isStale()) return
        const last = batch.messages[batch.messages.length - 1].offset
        const txn = await producer.transaction()
        try {
          await txn.send({ topic: output, acks: -1, messages: batch.messages.map(msg => ({
            key: msg.key, value: `t-${str(msg.value)}`, partition: batch.partition })) })
          await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: batch.topic,
            partitions: [{ partition: batch.partition, offset: String(Number(last) + 1) }] }] })
          await txn.commit()
        } catch (e) {
          m.failures.push(describe(e))
          out({ type: 'txn_failed', name, error: describe(e) })
          if (txn.isActive()) await txn.abort().catch(() => {})
          throw e
        }
        m.commits++
        m.records += batch.messages.length
        resolveOffset(last)
      },
    })
    return {}
  },

  async waitJoined({ names, partitions, timeoutMs = 20000 }) {
    await until(`assignment over ${names}`, timeoutMs, () => {
      const owned = []
      for (const name of names) {
        const a = members[name].assignment
        if (!a) return false
        for (const ps of Object.values(a)) owned.push(...ps)
      }
      owned.sort((x, y) => x - y)
      return owned.length === partitions && owned.every((p, i) => p === i) &&
        names.every(n => Object.values(members[n].assignment).some(ps => ps.length))
    })
    return { assignments: Object.fromEntries(names.map(n => [n, members[n].assignment])) }
  },

  // The consumer leaves the group (LeaveGroup), then its producer closes.
  async stopMember({ name }) {
    const m = members[name]
    m.running = false
    await m.consumer.disconnect()
    await m.producer.disconnect()
    return { commits: m.commits, records: m.records, failures: m.failures }
  },

  async stats() {
    return { members: Object.fromEntries(Object.entries(members).map(([n, m]) => [n,
      { commits: m.commits, records: m.records, failures: m.failures, joins: m.joins, running: m.running }])) }
  },

  async exit() {
    for (const m of Object.values(members)) {
      if (m.running) {
        m.running = false
        await m.consumer.disconnect().catch(() => {})
        await m.producer.disconnect().catch(() => {})
      }
    }
    for (const { producer } of Object.values(producers)) await producer.disconnect().catch(() => {})
    if (plain) await plain.disconnect()
    return {}
  },
}

// ---------------------------------------------------------------------------------------------
serve('transactions.js', COMMANDS, { watchdogMs: WATCHDOG_MS, describeError: e => ({ ...describe(e), stack: e && e.stack }) })
