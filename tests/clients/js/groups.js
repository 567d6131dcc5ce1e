#!/usr/bin/env node
// kafkajs consumer groups against a running FakeCluster, driven by tests/clients/test_kafkajs_groups.py.
//
//   node groups.js <bootstrap servers>
//
// A small command driver: the test writes one JSON command per line on stdin
// ({"id": 1, "cmd": "start", ...}) and this script answers each with one JSON line on stdout
// ({"type": "reply", "id": 1, ...} or {"type": "reply", "id": 1, "error": {...}}). Consumers run
// concurrently in this one process; what they do is reported as it happens with JSON lines of
// other types ("joined", "rebalancing", "crash", "stopped"). kafkajs's own log goes to stderr as
// JSON (level from KAFKAJS_LOG_LEVEL). Every wait is bounded; a watchdog ends the process.
//
// Records are produced as key "key-<i>", value "value-<i>" on partition i % partitions, so the
// test knows exactly what each consumer should see.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const { logLevel: LEVELS, Partitioners, AssignerProtocol } = require('kafkajs')

const WATCHDOG_MS = Number(process.env.SCENARIO_TIMEOUT_MS || 80000)
const LOG_LEVEL = LEVELS[(process.env.KAFKAJS_LOG_LEVEL || 'WARN').toUpperCase()] ?? LEVELS.WARN
const RETRY = { retries: 8, initialRetryTime: 100, maxRetryTime: 1000 }
const { out, sleep, str, kafkaClient, until, serve } = require('./lines')

// ---------------------------------------------------------------------------------------------
const bootstrap = process.argv[2]
if (!bootstrap) throw new Error('usage: groups.js <bootstrap servers>')

const kafka = kafkaClient('fakebroker-kafkajs-groups', bootstrap, RETRY, LOG_LEVEL)

const consumers = {} // name -> { consumer, groupId, memberId, assignment, running }
const consumed = [] // every record any consumer was handed: [name, partition, offset, key]
let producer = null
let idempotentProducer = null // a second producer with idempotence (sequence numbers), for retry tests
let admin = null
let produced = 0 // records acknowledged so far by the background stream
let stream = null // promise of a running produceStream

async function getProducer(idempotent = false) {
  if (idempotent) {
    if (!idempotentProducer) {
      idempotentProducer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner })
      await idempotentProducer.connect()
    }
    return idempotentProducer
  }
  if (!producer) {
    producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
  }
  return producer
}

async function getAdmin() {
  if (!admin) {
    admin = kafka.admin({ retry: RETRY })
    await admin.connect()
  }
  return admin
}

async function produceRange(topic, from, n, partitions, idempotent = false) {
  const p = await getProducer(idempotent)
  const messages = []
  for (let i = from; i < from + n; i++) messages.push({ key: `key-${i}`, value: `value-${i}`, partition: i % partitions })
  const meta = await p.send({ topic, acks: -1, messages })
  return meta.map(m => ({ partition: m.partition, errorCode: m.errorCode, baseOffset: Number(m.baseOffset) }))
}

const decodeAssignment = buf => {
  if (!buf || buf.length === 0) return null
  const decoded = AssignerProtocol.MemberAssignment.decode(buf)
  return decoded ? decoded.assignment : null
}
const decodeMetadata = buf => {
  if (!buf || buf.length === 0) return null
  const decoded = AssignerProtocol.MemberMetadata.decode(buf)
  return decoded ? { version: decoded.version, topics: decoded.topics } : null
}

// ---------------------------------------------------------------------------------------------
const COMMANDS = {
  // Start a consumer `name` in `groupId`, subscribed to `topic` from the beginning.
  // `maxBytes` / `maxBytesPerPartition`: kafkajs's fetch budgets, when given. `report`: each record
  // processed and each offset committed (kafkajs's auto-commit) as a "processed"/"committed" line,
  // for a delivery ledger.
  async start({ name, groupId, topic, sessionTimeout = 6000, rebalanceTimeout = 10000, heartbeatInterval = 500,
    maxBytes, maxBytesPerPartition, report = false }) {
    if (consumers[name]) throw new Error(`consumer ${name} exists`)
    const budgets = {}
    if (maxBytes !== undefined) budgets.maxBytes = maxBytes
    if (maxBytesPerPartition !== undefined) budgets.maxBytesPerPartition = maxBytesPerPartition
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout,
      rebalanceTimeout,
      heartbeatInterval,
      maxWaitTimeInMs: 100,
      retry: RETRY,
      ...budgets,
    })
    const entry = { consumer, groupId, memberId: null, assignment: null, joins: 0, running: true }
    consumers[name] = entry
    const { GROUP_JOIN, REBALANCING, CRASH, STOP } = consumer.events
    consumer.on(GROUP_JOIN, ({ payload }) => {
      entry.memberId = payload.memberId
      entry.assignment = payload.memberAssignment
      entry.joins++
      entry.settleMs = 0 // a stall's settling ends when the member is in a generation again
      out({ type: 'joined', name, memberId: payload.memberId, leaderId: payload.leaderId, isLeader: payload.isLeader,
        protocol: payload.groupProtocol, assignment: payload.memberAssignment })
    })
    consumer.on(REBALANCING, ({ payload }) => out({ type: 'rebalancing', name, memberId: payload.memberId }))
    consumer.on(CRASH, ({ payload }) => out({ type: 'crash', name, error: String(payload.error && payload.error.message),
      errorType: payload.error && payload.error.type, restart: payload.restart }))
    consumer.on(STOP, () => out({ type: 'stopped', name }))
    if (report) {
      consumer.on(consumer.events.COMMIT_OFFSETS, ({ payload }) => {
        for (const { topic: t, partitions } of payload.topics) {
          for (const { partition, offset } of partitions) {
            out({ type: 'committed', name, topic: t, partition, offset: Number(offset) })
          }
        }
      })
    }
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ topic: t, partition, message }) => {
        if (entry.stallMs > 0) { // stuck in processing: kafkajs sends nothing meanwhile (no heartbeat thread)
          const ms = entry.stallMs
          entry.stallMs = 0
          out({ type: 'stall_start', name, ms, partition, offset: Number(message.offset) })
          await sleep(ms)
          out({ type: 'stall_end', name })
          entry.settleMs = entry.stallSettleMs
        }
        consumed.push([name, partition, Number(message.offset), str(message.key)])
        if (report) {
          out({ type: 'processed', name, topic: t, partition, offset: Number(message.offset), key: str(message.key) })
        }
        if (entry.settleMs > 0) await sleep(entry.settleMs) // the line reaches the ledger before what follows
      },
    })
    return {}
  },

  // The next message `name` processes takes `ms` (eachMessage awaits that long before returning).
  // `settleMs`: from the stall's end until `name` joins a generation again, eachMessage waits that
  // long after each record's "processed" line, so a ledger reading the lines through the pipe has
  // them before the heartbeat and the rejoin that follow (the broker sees those at once).
  async stall({ name, ms, settleMs = 0 }) {
    consumers[name].stallMs = ms
    consumers[name].stallSettleMs = settleMs
    return {}
  },

  // Wait until every named consumer has joined, owns at least one partition, and between them
  // they own all `partitions` of `topic`, each exactly once (a settled generation).
  async waitAssigned({ names, topic, partitions, timeoutMs = 20000 }) {
    await until(`assignment of ${topic} over ${names}`, timeoutMs, () => {
      const owned = []
      for (const name of names) {
        const a = consumers[name] && consumers[name].assignment
        if (!a || !consumers[name].running || !(a[topic] || []).length) return false // each has a share
        owned.push(...a[topic])
      }
      owned.sort((x, y) => x - y)
      return owned.length === partitions && owned.every((p, i) => p === i)
    })
    return { assignments: Object.fromEntries(names.map(n => [n, consumers[n].assignment[topic] || []])),
      memberIds: Object.fromEntries(names.map(n => [n, consumers[n].memberId])) }
  },

  // One send() of records first..first+n-1 (`idempotent`: by the idempotent producer).
  async produce({ topic, first = 0, n, partitions, idempotent = false }) {
    return { sent: await produceRange(topic, first, n, partitions, idempotent) }
  },

  // Produce records first..first+n-1 in the background, `chunk` at a time every `intervalMs`.
  async produceStream({ topic, first = 0, n, partitions, chunk = 6, intervalMs = 20 }) {
    if (stream) throw new Error('a stream is already running')
    produced = 0
    stream = (async () => {
      for (let i = first; i < first + n; i += chunk) {
        const size = Math.min(chunk, first + n - i)
        await produceRange(topic, i, size, partitions)
        produced += size
        await sleep(intervalMs)
      }
    })()
    stream.catch(() => {})
    return {}
  },

  async waitProduced({ count, timeoutMs = 30000 }) {
    await until(`${count} streamed records`, timeoutMs, () => produced >= count)
    return { produced }
  },

  async waitStream({ timeoutMs = 30000 }) {
    if (!stream) throw new Error('no stream')
    let timer
    const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('stream did not finish')), timeoutMs) })
    try {
      await Promise.race([stream, timeout])
    } finally {
      clearTimeout(timer)
      stream = null
    }
    return { produced }
  },

  // Wait until the records key-0..key-(total-1) have all been consumed (by anyone).
  async waitConsumed({ total, timeoutMs = 20000 }) {
    await until(`${total} distinct records consumed`, timeoutMs, () => {
      const keys = new Set(consumed.map(r => r[3]))
      return keys.size >= total
    })
    return { consumed: consumed.length }
  },

  // Wait until the group's committed offsets reach the high watermarks of `topic`.
  async waitCommitted({ groupId, topic, timeoutMs = 20000 }) {
    const a = await getAdmin()
    let last = null
    try {
      await until(`commits of ${groupId} to reach the end of ${topic}`, timeoutMs, async () => {
        const ends = Object.fromEntries((await a.fetchTopicOffsets(topic)).map(o => [o.partition, Number(o.high)]))
        const [committed] = await a.fetchOffsets({ groupId, topics: [topic] })
        last = { ends, committed: Object.fromEntries(committed.partitions.map(p => [p.partition, Number(p.offset)])) }
        return committed.partitions.every(p => Number(p.offset) === ends[p.partition])
      }, 200)
    } catch (e) {
      throw new Error(`${e.message}: ${JSON.stringify(last)}`)
    }
    return last
  },

  // disconnect(): kafkajs stops fetching, commits and sends LeaveGroup.
  async stop({ name }) {
    const entry = consumers[name]
    entry.running = false
    await entry.consumer.disconnect()
    return { memberId: entry.memberId }
  },

  async consumed() {
    return { records: consumed }
  },

  async listGroups() {
    const { groups } = await (await getAdmin()).listGroups()
    return { groups }
  },

  async describeGroups({ groupIds }) {
    const { groups } = await (await getAdmin()).describeGroups(groupIds)
    return {
      groups: groups.map(g => ({
        errorCode: g.errorCode, groupId: g.groupId, state: g.state, protocolType: g.protocolType, protocol: g.protocol,
        members: g.members.map(m => ({ memberId: m.memberId, clientId: m.clientId, clientHost: m.clientHost,
          metadata: decodeMetadata(m.memberMetadata), assignment: decodeAssignment(m.memberAssignment) })),
      })),
    }
  },

  async deleteGroups({ groupIds }) {
    try {
      const results = await (await getAdmin()).deleteGroups(groupIds)
      return { results: results.map(r => ({ groupId: r.groupId, errorCode: r.errorCode })) }
    } catch (e) {
      return { failed: e.name, groups: (e.groups || []).map(g => ({ groupId: g.groupId, errorCode: g.errorCode,
        type: g.error && g.error.type })) }
    }
  },

  async fetchOffsets({ groupId, topics }) {
    const offsets = await (await getAdmin()).fetchOffsets({ groupId, topics })
    return { offsets: offsets.map(t => ({ topic: t.topic,
      partitions: t.partitions.map(p => ({ partition: p.partition, offset: Number(p.offset), metadata: p.metadata }))
        .sort((x, y) => x.partition - y.partition) })) }
  },

  async exit() {
    for (const [name, entry] of Object.entries(consumers)) {
      if (entry.running) {
        entry.running = false
        await entry.consumer.disconnect().catch(e => out({ type: 'disconnect_failed', name, error: String(e.message) }))
      }
    }
    if (producer) await producer.disconnect()
    if (idempotentProducer) await idempotentProducer.disconnect()
    if (admin) await admin.disconnect()
    return {}
  },
}

// ---------------------------------------------------------------------------------------------
serve('groups.js', COMMANDS, { watchdogMs: WATCHDOG_MS, describeError: e => ({ name: e && e.name, type: e && e.type, message: String(e && e.message), stack: e && e.stack }) })
