#!/usr/bin/env node
// kafkajs meets faults that this script itself scripts over fakebroker's HTTP control endpoint,
// with nothing but Node's built-in fetch: the way a JavaScript test suite would use it.
// Run by tests/clients/test_kafkajs_control.py against a cluster it started:
//
//   CONTROL_URL=http://127.0.0.1:P CONTROL_TOKEN=T node control_faults.js <rejoin|bounce|churned>
//
// The bootstrap servers come from GET /brokers. Prints exactly one JSON document on stdout (the
// scenario's result); kafkajs's log goes to stderr as JSON (KAFKAJS_LOG_LEVEL). Exit 0 on
// success, 1 on an error, 2 on the watchdog. Every wait is bounded.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const { Kafka, logLevel: LEVELS, Partitioners } = require('kafkajs')
const { until } = require('./lines')

const CONTROL_URL = process.env.CONTROL_URL
const CONTROL_TOKEN = process.env.CONTROL_TOKEN
const WATCHDOG_MS = Number(process.env.SCENARIO_TIMEOUT_MS || 40000)
const LOG_LEVEL = LEVELS[(process.env.KAFKAJS_LOG_LEVEL || 'WARN').toUpperCase()] ?? LEVELS.WARN
const RETRY = { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 }
const T0 = Date.now()

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const note = obj => process.stderr.write(JSON.stringify({ t: Date.now() - T0, note: true, ...obj }) + '\n')

// -- the control endpoint --------------------------------------------------------------------
async function control(method, path, body, timeoutMs = 20000) {
  const res = await fetch(CONTROL_URL + path, {
    method,
    headers: { Authorization: `Bearer ${CONTROL_TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  })
  const payload = await res.json()
  if (!res.ok) throw new Error(`${method} ${path} -> ${res.status}: ${payload.error}`)
  note({ control: `${method} ${path}`, status: res.status })
  return payload
}


// -- kafkajs ---------------------------------------------------------------------------------
async function client(clientId) {
  const { brokers } = await control('GET', '/brokers')
  return new Kafka({
    clientId,
    brokers: brokers.filter(b => b.alive).map(b => `${b.host}:${b.port}`),
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: RETRY,
    logLevel: LOG_LEVEL,
    logCreator: () => ({ namespace, label, log }) => {
      const { message, ...extra } = log
      process.stderr.write(JSON.stringify({ t: Date.now() - T0, level: label, namespace, message, ...extra }) + '\n')
    },
  })
}

async function produce(producer, topic, from, n, partition = undefined) {
  const messages = []
  for (let i = from; i < from + n; i++) messages.push({ key: `key-${i}`, value: `value-${i}`, partition })
  await producer.send({ topic, acks: -1, messages })
}

// Three REBALANCE_IN_PROGRESS heartbeat answers, set over HTTP: the consumer rejoins (a new
// generation) and still consumes every record produced before and after.
async function rejoin() {
  const topic = 'ctl-rejoin'
  const groupId = 'ctl-rejoin-group'
  await control('POST', '/topics', { name: topic, partitions: 3, replication_factor: 2 })
  const kafka = await client('ctl-rejoin')
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  await produce(producer, topic, 0, 30)

  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, rebalanceTimeout: 10000, heartbeatInterval: 200,
    maxWaitTimeInMs: 100, retry: RETRY })
  const seen = new Set()
  let joins = 0
  consumer.on(consumer.events.GROUP_JOIN, () => { joins++ })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({ eachMessage: async ({ message }) => { seen.add(message.value.toString()) } })

  const first = (await control('POST', '/wait', { condition: 'group_state', group: groupId, state: 'Stable', members: 1,
    timeout: 15 })).result
  await until('the first 30 records', 15000, () => seen.size >= 30)
  const rule = await control('POST', '/faults', { api: 'Heartbeat', group: groupId, error: 'REBALANCE_IN_PROGRESS', times: 3 })
  const spent = await until('the rule to fire 3 times', 15000, async () => {
    const r = await control('GET', `/faults/${rule.id}`)
    return r.fired >= 3 ? r : null
  }, 200)
  const later = (await control('POST', '/wait', { condition: 'group_state', group: groupId, state: 'Stable', members: 1,
    generation_above: first.generation, timeout: 15 })).result
  await produce(producer, topic, 30, 30)
  await until('all 60 records', 15000, () => seen.size >= 60)
  const view = await control('GET', `/groups/${encodeURIComponent(groupId)}`)
  const fired = (await control('GET', `/events?kind=fault_fired&group=${encodeURIComponent(groupId)}`)).events
  await consumer.disconnect()
  await producer.disconnect()
  const expected = Array.from({ length: 60 }, (_, i) => `value-${i}`)
  return { firstGeneration: first.generation, laterGeneration: later.generation, generationNow: view.generation,
    state: view.state, members: view.members, rule: spent, heartbeatErrors: fired.map(e => e.details.error), joins,
    consumed: seen.size, missing: expected.filter(v => !seen.has(v)) }
}

// Broker 1 stopped and started over HTTP while kafkajs produces: every send is acknowledged
// and every record lands. Each send() goes to one partition: kafkajs 2.2.4 loses the records of
// a send that spans brokers when one leader dies mid-send and its partitions move to a broker
// that already answered that send (sendMessages skips brokers with a response on the retry,
// and resolves) -- a client bug, which fakebroker reproduces faithfully.
async function bounce() {
  const topic = 'ctl-bounce'
  const total = 240
  await control('POST', '/topics', { name: topic, partitions: 6, replication_factor: 3 })
  const kafka = await client('ctl-bounce')
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner, retry: RETRY })
  await producer.connect()
  let acked = 0
  const stream = (async () => {
    for (let i = 0; i < total; i += 4) {
      await produce(producer, topic, i, 4, (i / 4) % 6)
      acked += 4
      await sleep(15)
    }
  })()
  stream.catch(() => {})
  await until('a first share acknowledged', 10000, () => acked >= 40)
  const ledBefore = (await control('GET', `/topics/${topic}`)).partitions.filter(p => p.leader === 1).length
  const stopped = await control('POST', '/brokers/1/stop')
  const ackedAtStop = acked
  const whileDown = (await control('GET', `/topics/${topic}`)).partitions.map(p => p.leader)
  await until('sends while broker 1 is down', 10000, () => acked >= ackedAtStop + 40)
  const started = await control('POST', '/brokers/1/start')
  const moved = (await control('POST', '/leaders/preferred')).moved
  await stream
  const hw = (await control('GET', `/topics/${topic}`)).partitions.reduce((sum, p) => sum + p.high_watermark, 0)
  const events = (await control('GET', '/events?kind=broker_stopped,broker_started')).events
  await producer.disconnect()
  return { total, acked, ackedAtStop, ledBefore, stopped, started, whileDown, moved, highWatermarkSum: hw,
    brokerEvents: events.map(e => [e.kind, e.broker]) }
}

// Two kafkajs consumers in a group while the script runs seeded churn on it over HTTP (POST
// /groups/{id}/churn: coordinator storms, partition growth, broker bounces, network cuts of a
// member) and an idempotent producer writes before and after: every record is consumed.
async function churned() {
  const topic = 'ctl-churn'
  const groupId = 'ctl-churn-group'
  const seed = Number(process.env.CHURN_SEED || 11)
  await control('POST', '/topics', { name: topic, partitions: 4, replication_factor: 3 })
  const kafka = await client('ctl-churn')
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const seen = new Set()
  const consumers = []
  for (const name of ['churn-a', 'churn-b']) {
    // maxWaitTimeInMs: kafkajs heartbeats (and so learns of a rebalance) between fetches, and
    // disconnect waits out the fetch in flight: with the default 5 s long poll on an idle topic each
    // rebalance of a churn block, and each disconnect, waited up to 5 s
    const consumer = (await client(name)).consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 300,
      rebalanceTimeout: 6000, metadataMaxAge: 500, maxWaitTimeInMs: 100, retry: RETRY })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { seen.add(message.value.toString()) } })
    consumers.push(consumer)
  }
  await control('POST', '/wait', { condition: 'group_state', group: groupId, state: 'Stable', members: 2, timeout: 20 })
  await produce(producer, topic, 0, 100)
  const report = await control('POST', `/groups/${groupId}/churn`, { topic, seed, steps: 4, settle_timeout: 25 }, 60000)
  // A producer made after the churn: kafkajs 2.2.4's producer, sending with metadata from before
  // the topic grew and before a leader moved, gets NOT_LEADER_OR_FOLLOWER for the moved partition
  // (as from Kafka), re-partitions on its retry over the grown topic and resolves send() having
  // sent only one new partition's share: the rest are never sent (seen here: p2, p4 and p5).
  const after = kafka.producer({ idempotent: true, maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner })
  await after.connect()
  await produce(after, topic, 100, 100)
  await after.disconnect()
  await until('every record consumed', 20000, () => seen.size === 200).catch(err => {
    const missing = [...Array(200).keys()].map(i => `value-${i}`).filter(v => !seen.has(v))
    throw new Error(`${err.message}: ${missing.length} missing (${missing.slice(0, 10).join(', ')})`)
  })
  // the group ends whole: kafkajs may notice the grown topic (metadataMaxAge) after the churn's
  // settling, and its leader then rejoins (a rebalance, as on Kafka): wait for that one too
  await control('POST', '/wait', { condition: 'group_state', group: groupId, state: 'Stable', members: 2, timeout: 20 })
  const group = await control('GET', `/groups/${groupId}`)
  const { partitions } = await control('GET', `/topics/${topic}`)
  for (const consumer of consumers) await consumer.disconnect()
  await producer.disconnect()
  return { report, consumed: seen.size, state: group.state, members: group.members.length,
    partitions: partitions.length }
}

const SCENARIOS = { rejoin, bounce, churned }

async function main() {
  if (!CONTROL_URL || !CONTROL_TOKEN) throw new Error('CONTROL_URL and CONTROL_TOKEN must be set')
  const scenario = SCENARIOS[process.argv[2]]
  if (!scenario) throw new Error(`usage: control_faults.js <${Object.keys(SCENARIOS).join('|')}>`)
  const watchdog = setTimeout(() => {
    process.stderr.write(JSON.stringify({ error: `watchdog: ${WATCHDOG_MS} ms` }) + '\n')
    process.exit(2)
  }, WATCHDOG_MS)
  const result = await scenario()
  clearTimeout(watchdog)
  process.stdout.write(JSON.stringify(result) + '\n')
}

main().then(() => process.exit(0), err => {
  process.stderr.write(JSON.stringify({ error: String(err && err.stack || err) }) + '\n')
  process.exit(1)
})
