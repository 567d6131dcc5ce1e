#!/usr/bin/env node
// kafkajs scenarios against a running FakeCluster, driven by tests/clients/test_kafkajs.py.
//
//   node scenarios.js <bootstrap servers> <scenario> [JSON arguments]
//
// Prints exactly one JSON document on stdout (the scenario's result); kafkajs's own log lines
// go to stderr as JSON (level from KAFKAJS_LOG_LEVEL: NOTHING, ERROR, WARN, INFO, DEBUG).
// Exit code 0 on success, 1 on an error (reported as JSON on stderr), 2 on the watchdog.
//
// Keys and values are UTF-8 strings; buffers from the broker are decoded the same way.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const { Kafka, CompressionTypes, CompressionCodecs, logLevel: LEVELS, Partitioners } = require('kafkajs')

const WATCHDOG_MS = Number(process.env.SCENARIO_TIMEOUT_MS || 40000)
const MAX_FETCH_ROUNDS = 100 // bound on the read-back loop (each round is one Fetch per leader)

// ---------------------------------------------------------------------------------------------
// Optional codecs: GZIP is built into kafkajs; Snappy, LZ4 and ZSTD come from codec packages. LZ4
// needs a native build (node-gyp) and is an optionalDependency, so it may be missing. kafkajs's own
// ZSTD package (@kafkajs/zstd -> cppzst) does not build on current Node: ZSTD is the zstd library
// compiled to WebAssembly (@bokuweb/zstd-wasm), plugged in through kafkajs's codec interface.
const available = { none: true, gzip: true, snappy: false, lz4: false, zstd: false }
const unavailableReasons = {}
try {
  CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
  available.snappy = true
} catch (e) {
  unavailableReasons.snappy = String(e.message || e)
}
try {
  const LZ4Codec = require('kafkajs-lz4')
  CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec
  available.lz4 = true
} catch (e) {
  unavailableReasons.lz4 = String(e.message || e)
}
try {
  const zstd = require('@bokuweb/zstd-wasm')
  const ready = zstd.init() // loads the WebAssembly module once
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    async compress (encoder) {
      await ready
      return Buffer.from(zstd.compress(encoder.buffer, 3)) // level 3: Kafka's default
    },
    async decompress (buffer) {
      await ready
      return Buffer.from(zstd.decompress(buffer))
    },
  })
  available.zstd = true
} catch (e) {
  unavailableReasons.zstd = String(e.message || e)
}
const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}

// ---------------------------------------------------------------------------------------------
const stderrLogCreator = () => ({ namespace, level, label, log }) => {
  const { message, ...extra } = log
  process.stderr.write(JSON.stringify({ level: label, namespace, message, ...extra }) + '\n')
}

// Bounded retries everywhere (kafkajs passes the client's retry to the producer too, so the
// idempotent producer logs a warning that limited retries may break exactly-once: intended, a
// test must end rather than retry forever).
const RETRY = { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 }
const LOG_LEVEL = LEVELS[(process.env.KAFKAJS_LOG_LEVEL || 'WARN').toUpperCase()] ?? LEVELS.WARN

function makeKafka(bootstrap) {
  return new Kafka({
    clientId: 'fakebroker-kafkajs',
    brokers: bootstrap.split(','),
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: RETRY,
    logLevel: LOG_LEVEL,
    logCreator: stderrLogCreator,
  })
}

const str = buf => (buf == null ? null : Buffer.from(buf).toString('utf8'))

// ---------------------------------------------------------------------------------------------
// Reading without a consumer group. kafkajs's public Consumer always joins a group
// (FindCoordinator/JoinGroup/SyncGroup, which fakebroker does not implement yet) and has no
// assign() API. So the read-back goes through kafkajs's own (internal, but stable for the pinned
// 2.2.4) Cluster and Broker classes: Metadata to find the leaders, then plain Fetch requests
// decoded by kafkajs's record-batch decoder (including decompression). The Python side also
// checks the same records through cluster.records() and the high watermarks through
// admin.fetchTopicOffsets (kafkajs's public API).
const Cluster = require('kafkajs/src/cluster')
const { createLogger } = require('kafkajs/src/loggers')
const { requests } = require('kafkajs/src/protocol/requests')
const apiKeys = require('kafkajs/src/protocol/requests/apiKeys')

async function readAll(bootstrap, topic, expectedHigh) {
  const cluster = new Cluster({
    logger: createLogger({ level: LOG_LEVEL, logCreator: stderrLogCreator }),
    brokers: bootstrap.split(','),
    clientId: 'fakebroker-kafkajs-reader',
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: RETRY,
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
    socketFactory: require('kafkajs/src/network/socketFactory')(),
  })
  await cluster.connect()
  try {
    await cluster.addTargetTopic(topic)
    await cluster.refreshMetadata()
    const partitions = cluster.findTopicPartitionMetadata(topic).map(p => p.partitionId)
    const next = {} // partition -> next offset to fetch
    for (const p of partitions) next[p] = 0
    const records = []
    const fetchVersions = new Set()
    const highWatermarks = {}
    let rounds = 0
    const pending = () => partitions.filter(p => next[p] < (expectedHigh[p] ?? 0))
    while (pending().length > 0) {
      if (++rounds > MAX_FETCH_ROUNDS) {
        throw new Error(`read-back did not finish in ${MAX_FETCH_ROUNDS} rounds: ${JSON.stringify(next)}`)
      }
      const byLeader = cluster.findLeaderForPartitions(topic, pending())
      for (const [nodeId, leaderPartitions] of Object.entries(byLeader)) {
        const broker = await cluster.findBroker({ nodeId })
        fetchVersions.add(broker.lookupRequest(apiKeys.Fetch, requests.Fetch)({ topics: [] }).request.apiVersion)
        const response = await broker.fetch({
          maxWaitTime: 100,
          minBytes: 1,
          maxBytes: 1 << 20,
          // small partition limit: several rounds, each starting mid-log
          topics: [{ topic, partitions: leaderPartitions.map(p => ({ partition: p, fetchOffset: String(next[p]), maxBytes: 2048 })) }],
        })
        for (const topicResponse of response.responses) {
          for (const part of topicResponse.partitions) {
            if (part.errorCode !== 0) throw new Error(`fetch error ${part.errorCode} on ${topic}-${part.partition}`)
            highWatermarks[part.partition] = Number(part.highWatermark)
            for (const m of part.messages) {
              const offset = Number(m.offset)
              if (offset < next[part.partition] || m.isControlRecord) continue // whole batches come back
              if (offset !== next[part.partition]) {
                throw new Error(`gap in ${topic}-${part.partition}: expected offset ${next[part.partition]}, got ${offset}`)
              }
              records.push([part.partition, offset, str(m.key), str(m.value)])
              next[part.partition] = offset + 1
            }
          }
        }
      }
    }
    return { records, highWatermarks, fetchRounds: rounds, fetchVersions: [...fetchVersions] }
  } finally {
    await cluster.disconnect()
  }
}

// ---------------------------------------------------------------------------------------------
async function produce(kafka, bootstrap, args) {
  const {
    topic = 'orders', n = 300, partitions = 6, chunk = 50, compression = 'none', idempotent = false,
    acks = -1, timestampBase = null, readBack = true,
  } = args
  if (!available[compression]) throw new Error(`codec ${compression} is not available: ${unavailableReasons[compression]}`)
  const producer = kafka.producer({
    idempotent,
    maxInFlightRequests: idempotent ? 1 : undefined,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  })
  const admin = kafka.admin()
  await producer.connect()
  await admin.connect()
  try {
    const sent = []
    for (let start = 0; start < n; start += chunk) {
      const messages = []
      for (let i = start; i < Math.min(n, start + chunk); i++) {
        const message = { key: `key-${i}`, value: `value-${i}`, partition: i % partitions }
        if (timestampBase != null) message.timestamp = String(timestampBase + i)
        messages.push(message)
      }
      const metadata = await producer.send({ topic, acks, compression: CODECS[compression], messages })
      for (const m of metadata) {
        sent.push({ partition: m.partition, errorCode: m.errorCode, baseOffset: Number(m.baseOffset),
          logStartOffset: m.logStartOffset == null ? null : Number(m.logStartOffset) })
      }
    }
    const offsets = (await admin.fetchTopicOffsets(topic)).map(o => ({ partition: o.partition, low: Number(o.low), high: Number(o.high) }))
    const result = { sent, offsets }
    if (readBack) {
      const expectedHigh = Object.fromEntries(offsets.map(o => [o.partition, o.high]))
      Object.assign(result, await readAll(bootstrap, topic, expectedHigh))
    }
    return result
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
}

// ---------------------------------------------------------------------------------------------
// Admin steps: one per invocation so that pytest checks the cluster's state between them.
const configEntries = resources => resources.map(r => ({
  errorCode: r.errorCode,
  resourceType: r.resourceType,
  resourceName: r.resourceName,
  configs: Object.fromEntries(r.configEntries.map(e => [e.configName, { value: e.configValue, readOnly: e.readOnly, isDefault: e.isDefault, source: e.configSource }])),
}))

const ADMIN = {
  // kafkajs answers true when created, false when every topic already existed (it swallows
  // TOPIC_ALREADY_EXISTS), and throws a KafkaJSAggregateError for other per-topic errors.
  async createTopics(admin, { topics, validateOnly = false }) {
    try {
      const created = await admin.createTopics({ topics, validateOnly, waitForLeaders: !validateOnly, timeout: 5000 })
      return { created }
    } catch (e) {
      return { error: e.name, errors: (e.errors || []).map(x => ({ type: x.type, message: x.message })) }
    }
  },

  async fetchTopicMetadata(admin, { topics }) {
    const { topics: meta } = await admin.fetchTopicMetadata({ topics })
    return {
      topics: meta.map(t => ({
        name: t.name,
        partitions: t.partitions
          .map(p => ({ partitionId: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr, errorCode: p.partitionErrorCode }))
          .sort((a, b) => a.partitionId - b.partitionId),
      })),
      listTopics: (await admin.listTopics()).sort(),
    }
  },

  async createPartitions(admin, { topicPartitions }) {
    return { ok: await admin.createPartitions({ topicPartitions, timeout: 5000 }) }
  },

  async describeConfigs(admin, { resources }) {
    const { ResourceTypes, ConfigResourceTypes } = require('kafkajs')
    const types = ConfigResourceTypes || ResourceTypes
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: resources.map(r => ({ type: types[r.type], name: r.name, configNames: r.configNames })),
    })
    return { resources: configEntries(described.resources) }
  },

  async fetchTopicOffsets(admin, { topic, timestamps = [] }) {
    const offsets = (await admin.fetchTopicOffsets(topic)).map(o => ({ partition: o.partition, low: Number(o.low), high: Number(o.high), offset: Number(o.offset) }))
    const byTimestamp = {}
    for (const ts of timestamps) {
      byTimestamp[ts] = (await admin.fetchTopicOffsetsByTimestamp(topic, ts)).map(o => ({ partition: o.partition, offset: Number(o.offset) }))
    }
    return { offsets, byTimestamp }
  },

  async deleteTopicRecords(admin, { topic, partitions }) {
    // kafkajs 2.2.4's deleteTopicRecords looks the leaders up before it loads the topic's
    // metadata (KafkaJSTopicMetadataNotLoaded on a fresh admin client): load it first.
    await admin.fetchTopicOffsets(topic)
    await admin.deleteTopicRecords({ topic, partitions: partitions.map(p => ({ partition: p.partition, offset: String(p.offset) })) })
    const offsets = (await admin.fetchTopicOffsets(topic)).map(o => ({ partition: o.partition, low: Number(o.low), high: Number(o.high) }))
    return { offsets }
  },

  async deleteTopics(admin, { topics }) {
    await admin.deleteTopics({ topics, timeout: 5000 })
    return { listTopics: (await admin.listTopics()).sort() }
  },
}

async function adminStep(kafka, args) {
  const step = ADMIN[args.step]
  if (!step) throw new Error(`unknown admin step ${args.step}`)
  const admin = kafka.admin({ retry: RETRY })
  await admin.connect()
  try {
    return await step(admin, args)
  } finally {
    await admin.disconnect()
  }
}

// ---------------------------------------------------------------------------------------------
const SCENARIOS = {
  async codecs() {
    return { available, unavailableReasons, kafkajs: require('kafkajs/package.json').version }
  },
  async produce(kafka, bootstrap, args) {
    return produce(kafka, bootstrap, args)
  },
  async admin(kafka, bootstrap, args) {
    return adminStep(kafka, args)
  },
}

async function main() {
  const [bootstrap, scenario, rawArgs] = process.argv.slice(2)
  if (!bootstrap || !SCENARIOS[scenario]) {
    throw new Error(`usage: scenarios.js <bootstrap> <${Object.keys(SCENARIOS).join('|')}> [json args]`)
  }
  const args = rawArgs ? JSON.parse(rawArgs) : {}
  const result = await SCENARIOS[scenario](makeKafka(bootstrap), bootstrap, args)
  process.stdout.write(JSON.stringify(result) + '\n')
}

const watchdog = setTimeout(() => {
  process.stderr.write(JSON.stringify({ level: 'FATAL', message: `scenario did not finish in ${WATCHDOG_MS} ms` }) + '\n')
  process.exit(2)
}, WATCHDOG_MS)

main().then(
  () => {
    clearTimeout(watchdog)
    process.exit(0)
  },
  e => {
    clearTimeout(watchdog)
    process.stderr.write(JSON.stringify({ level: 'FATAL', name: e && e.name, type: e && e.type, message: String(e && e.message), stack: e && e.stack }) + '\n')
    process.exit(1)
  }
)
