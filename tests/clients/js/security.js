#!/usr/bin/env node
// kafkajs over SASL_SSL (issue 37) against a running FakeCluster, driven by
// tests/clients/test_kafkajs_security.py.
//
//   node security.js <bootstrap servers> <scenario> <JSON arguments>
//
// Every scenario's arguments carry the connection: {ca: PEM file, mechanism: 'scram-sha-512' |
// 'plain' | ..., username, password}. TLS is kafkajs's (Node's tls): ssl: {ca: [pem]}, the
// broker's certificate checked against the CA and the host name (rejectUnauthorized stays true).
//
//   round-trip      {topic, groupId, n}  produce n records (key-i, value-i on partition i % partitions),
//                                        then one consumer of group groupId reads them (autoCommit off),
//                                        commits the next offsets, and the admin reads them back
//   wrong-password  {topic, groupId}     producer.connect(), consumer.connect(), admin.connect(),
//                                        each reporting the error it is refused with
//
// Prints exactly one JSON document on stdout; kafkajs's log goes to stderr as JSON (level from
// KAFKAJS_LOG_LEVEL). Exit code 0 on success, 1 on an error (JSON on stderr), 2 on the watchdog.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const fs = require('fs')
const { Kafka, logLevel: LEVELS, Partitioners } = require('kafkajs')
const { str, stderrLogCreator, describeKafkaError, until } = require('./lines')

const WATCHDOG_MS = Number(process.env.SCENARIO_TIMEOUT_MS || 40000)
const LOG_LEVEL = LEVELS[(process.env.KAFKAJS_LOG_LEVEL || 'WARN').toUpperCase()] ?? LEVELS.WARN
const RETRY = { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 }

function makeKafka(bootstrap, { ca, mechanism, username, password }, clientId) {
  return new Kafka({
    clientId,
    brokers: bootstrap.split(','),
    ssl: { ca: [fs.readFileSync(ca, 'utf8')] },
    sasl: { mechanism, username, password },
    connectionTimeout: 5000,
    authenticationTimeout: 5000,
    requestTimeout: 10000,
    retry: RETRY,
    logLevel: LOG_LEVEL,
    logCreator: stderrLogCreator,
  })
}

// ---------------------------------------------------------------------------------------------
async function roundTrip(bootstrap, args) {
  const { topic, groupId, n } = args
  const kafka = makeKafka(bootstrap, args, 'fakebroker-kafkajs-secure')
  const admin = kafka.admin({ retry: RETRY })
  await admin.connect()
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  let consumer = null
  try {
    const partitions = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length
    const messages = []
    for (let i = 0; i < n; i++) messages.push({ key: `key-${i}`, value: `value-${i}`, partition: i % partitions })
    const sent = (await producer.send({ topic, acks: -1, messages }))
      .map(m => ({ partition: m.partition, errorCode: m.errorCode, baseOffset: Number(m.baseOffset) }))
      .sort((a, b) => a.partition - b.partition)

    consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 100, retry: RETRY })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    const records = []
    const next = {} // partition -> the offset after the last record read
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        records.push([partition, Number(message.offset), str(message.key), str(message.value)])
        next[partition] = Number(message.offset) + 1
      },
    })
    await until(`${n} records`, 30000, () => records.length >= n)
    await consumer.commitOffsets(
      Object.entries(next).map(([partition, offset]) => ({ topic, partition: Number(partition), offset: String(offset) }))
    )
    const fetched = await admin.fetchOffsets({ groupId, topics: [topic] })
    const committed = Object.fromEntries(fetched[0].partitions.map(p => [p.partition, Number(p.offset)]))
    return { sent, records, committed }
  } finally {
    if (consumer) await consumer.disconnect()
    await producer.disconnect()
    await admin.disconnect()
  }
}

// Each client on its own: connect() must fail, and how it fails is the result.
async function wrongPassword(bootstrap, args) {
  const kafka = makeKafka(bootstrap, args, 'fakebroker-kafkajs-refused')
  const clients = {
    producer: kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner }),
    consumer: kafka.consumer({ groupId: args.groupId, retry: RETRY }),
    admin: kafka.admin({ retry: RETRY }),
  }
  const refused = {}
  for (const [name, client] of Object.entries(clients)) {
    try {
      await client.connect()
      refused[name] = null // connected: the test fails on this
    } catch (e) {
      refused[name] = describeKafkaError(e)
    } finally {
      await client.disconnect()
    }
  }
  return { refused }
}

const SCENARIOS = { 'round-trip': roundTrip, 'wrong-password': wrongPassword }

async function main() {
  const [bootstrap, scenario, rawArgs] = process.argv.slice(2)
  if (!bootstrap || !SCENARIOS[scenario]) {
    throw new Error(`usage: security.js <bootstrap> <${Object.keys(SCENARIOS).join('|')}> <json args>`)
  }
  const result = await SCENARIOS[scenario](bootstrap, JSON.parse(rawArgs))
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
