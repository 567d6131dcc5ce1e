// The order consumer against a fake 3-broker cluster, with the bad days scripted over
// fakebroker's HTTP control endpoint. Run: `npm test` (or `node --test`) in this folder, with
// `fakebroker` on the PATH or FAKEBROKER set to the command that runs it.
'use strict'

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, Partitioners, logLevel } = require('kafkajs')

const { FakeBroker, sleep } = require('./fakebroker')
const { OrderConsumer } = require('./orderConsumer')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

let fb // one server for this file; every test has its own topic and group

before(async () => { fb = await FakeBroker.start({ brokers: 3 }) })
after(async () => {
  if (fb) await fb.stop()
  // a safety net, not a habit: if a client a failed test left behind still has timers
  // (kafkajs restarting a crashed consumer), don't let them keep this file running forever
  setTimeout(() => process.exit(), 5000).unref()
})

/** A test whose failure message ends with the server's latest event lines. */
function scenario (name, fn) {
  test(name, { timeout: 50000 }, async t => {
    const cleanup = []
    try {
      await fn(cleanup, t)
    } catch (err) {
      err.message += `\n--- fakebroker serve, last lines ---\n${fb.tail()}`
      throw err
    } finally {
      for (const close of cleanup.reverse()) await within(10000, close().catch(() => {}))
    }
  })
}

/** `promise`, or nothing after `ms`; the timer is cleared either way, so it keeps nothing running. */
async function within (ms, promise) {
  let timer
  const timeout = new Promise(resolve => { timer = setTimeout(resolve, ms) })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

// -- helpers a suite like this grows ---------------------------------------------------------
async function producerFor (cleanup) {
  const kafka = new Kafka({ clientId: 'order-feed', brokers: fb.bootstrap, logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 } })
  // idempotent, one request in flight, one partition per send: nothing lost or doubled while
  // leaders move (kafkajs 2.2.4 can drop a send spanning brokers when one of them dies mid-send)
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  cleanup.push(() => producer.disconnect())
  return producer
}

/** Orders first..first+n-1; order i goes to partition i % partitions, one send per partition. */
async function sendOrders (producer, topic, first, n, partitions) {
  const byPartition = new Map()
  for (let i = first; i < first + n; i++) {
    const p = i % partitions
    if (!byPartition.has(p)) byPartition.set(p, [])
    byPartition.get(p).push({ key: `order-${i}`, value: JSON.stringify({ id: `order-${i}`, cents: 100 + i }), partition: p })
  }
  for (const messages of byPartition.values()) await producer.send({ topic, acks: -1, messages })
}

/** A consumer whose handler counts each order it is given. */
async function startConsumer (cleanup, groupId, topic) {
  const handled = new Map()
  const svc = new OrderConsumer({ brokers: fb.bootstrap, groupId, topic, handle: order => {
    handled.set(order.id, (handled.get(order.id) || 0) + 1)
  } })
  await svc.start()
  cleanup.push(() => svc.stop())
  return { svc, handled }
}

const orderIds = (from, to) => Array.from({ length: to - from }, (_, i) => `order-${from + i}`)
const twice = handled => [...handled].filter(([, n]) => n > 1).map(([id, n]) => `${id} x${n}`)

const report = svc => `joins ${svc.joins.length}, consumer restarts ${svc.crashes.length}, redeliveries skipped ${svc.skipped}`

async function committedTotal (groupId, total) {
  return fb.until(`${total} committed offsets in ${groupId}`, async () => {
    const offsets = await fb.committed(groupId)
    const sum = Object.values(offsets).reduce((a, b) => a + b, 0)
    return sum === total ? offsets : null
  })
}

// -- the tests -------------------------------------------------------------------------------
scenario('three REBALANCE_IN_PROGRESS heartbeats: the consumer rejoins and handles every order once', async (cleanup, t) => {
  const topic = 'orders-hb'
  const groupId = 'orders-hb'
  await fb.createTopic(topic, 3, { replicationFactor: 3 })
  const producer = await producerFor(cleanup)
  const { svc, handled } = await startConsumer(cleanup, groupId, topic)
  const first = await fb.waitFor('group_state', { group: groupId, state: 'Stable', members: 1 })
  await sendOrders(producer, topic, 0, 30, 3)
  await fb.until('the first 30 orders', () => handled.size >= 30)

  const rule = await fb.addFault({ api: 'Heartbeat', group: groupId, error: 'REBALANCE_IN_PROGRESS', times: 3 })
  const spent = await fb.until('three heartbeat errors', async () => {
    const r = await fb.fault(rule.id)
    return r.fired >= 3 ? r : null
  })
  const later = await fb.waitFor('group_state', { group: groupId, state: 'Stable', members: 1,
    generation_above: first.generation })
  await sendOrders(producer, topic, 30, 30, 3)
  await fb.until('all 60 orders', () => handled.size >= 60)

  assert.equal(spent.active, false, 'the rule is spent after three answers')
  const fired = await fb.events({ kind: 'fault_fired', group: groupId })
  assert.deepEqual(fired.map(e => e.details.error), Array(3).fill('REBALANCE_IN_PROGRESS'))
  assert.ok(later.generation > first.generation, 'the consumer rejoined: a new generation')
  assert.ok(svc.joins.length >= 2, `joined ${svc.joins.length} times`)
  assert.deepEqual([...handled.keys()].sort(), orderIds(0, 60).sort())
  assert.deepEqual(twice(handled), [], 'no order handled twice')
  const offsets = await committedTotal(groupId, 60)
  t.diagnostic(report(svc))
  assert.deepEqual(offsets, { 'orders-hb/0': 20, 'orders-hb/1': 20, 'orders-hb/2': 20 })
  const group = await fb.group(groupId)
  assert.equal(group.members.length, 1)
  assert.deepEqual(group.members[0].assignment, { [topic]: [0, 1, 2] })
})

scenario('a partition leader stops and starts mid-stream: every order handled once', async (cleanup, t) => {
  const topic = 'orders-bounce'
  const groupId = 'orders-bounce'
  const total = 240
  await fb.createTopic(topic, 6, { replicationFactor: 3 })
  const producer = await producerFor(cleanup)
  const { svc, handled } = await startConsumer(cleanup, groupId, topic)
  const stable = await fb.waitFor('group_state', { group: groupId, state: 'Stable', members: 1 })
  // a broker that leads partitions of the topic but not the group (test 3 moves the coordinator)
  const leaders = (await fb.topic(topic)).partitions.map(p => p.leader)
  const victim = [0, 1, 2].find(b => b !== stable.coordinator && leaders.includes(b))
  const led = leaders.filter(b => b === victim).length
  cleanup.push(async () => { // whatever happened, leave all three brokers up for the next test
    if (!(await fb.brokers()).find(b => b.id === victim).alive) await fb.startBroker(victim)
  })

  let sent = 0
  const feed = (async () => { // a steady stream of orders, 4 at a time
    for (let i = 0; i < total; i += 4) {
      await sendOrders(producer, topic, i, 4, 6)
      sent += 4
      await sleep(20)
    }
  })()
  feed.catch(() => {}) // awaited below; don't let an early failure go unhandled meanwhile

  await fb.until('a first share handled', () => handled.size >= 60)
  const stopped = await fb.stopBroker(victim)
  const sentAtStop = sent
  const leadersWhileDown = (await fb.topic(topic)).partitions.map(p => p.leader)
  await fb.until('orders sent and handled while the broker is down',
    () => sent >= sentAtStop + 40 && handled.size >= sentAtStop + 20, { timeoutMs: 20000 })
  const started = await fb.startBroker(victim)
  const { moved } = await fb.electPreferredLeaders()
  await feed
  await fb.until(`all ${total} orders`, () => handled.size >= total, { timeoutMs: 25000 })

  assert.equal(stopped.alive, false)
  assert.equal(started.alive, true)
  assert.ok(sentAtStop < total, 'stopped in the middle of the stream')
  assert.ok(!leadersWhileDown.includes(victim) && !leadersWhileDown.includes(-1), `leaders while down: ${leadersWhileDown}`)
  assert.ok(moved >= led, `${moved} leaders moved back to broker ${victim}, which led ${led}`)
  assert.deepEqual([...handled.keys()].sort(), orderIds(0, total).sort(), 'no order lost')
  assert.deepEqual(twice(handled), [], 'redeliveries are skipped, not handled again')
  await committedTotal(groupId, total)
  t.diagnostic(report(svc))
  const brokerEvents = await fb.events({ kind: 'broker_stopped,broker_started', broker: victim })
  assert.deepEqual(brokerEvents.slice(-2).map(e => e.kind), ['broker_stopped', 'broker_started'])
})

scenario('the group coordinator moves (and loads for 500 ms): every order handled once', async (cleanup, t) => {
  const topic = 'orders-move'
  const groupId = 'orders-move'
  const total = 120
  await fb.createTopic(topic, 3, { replicationFactor: 3 })
  const producer = await producerFor(cleanup)
  const { svc, handled } = await startConsumer(cleanup, groupId, topic)
  const stable = await fb.waitFor('group_state', { group: groupId, state: 'Stable', members: 1 })
  await sendOrders(producer, topic, 0, 60, 3)
  await fb.until('the first 60 orders', () => handled.size >= 60)
  await committedTotal(groupId, 60)

  const { coordinator } = await fb.moveCoordinator(groupId, { loadTimeMs: 500 })
  await sendOrders(producer, topic, 60, 60, 3)
  await fb.until(`all ${total} orders`, () => handled.size >= total, { timeoutMs: 20000 })
  const offsets = await committedTotal(groupId, total)
  t.diagnostic(report(svc))

  assert.notEqual(coordinator, stable.coordinator)
  assert.deepEqual([...handled.keys()].sort(), orderIds(0, total).sort())
  assert.deepEqual(twice(handled), [], 'no order handled twice')
  assert.deepEqual(offsets, { 'orders-move/0': 40, 'orders-move/1': 40, 'orders-move/2': 40 })
  const group = await fb.waitFor('group_state', { group: groupId, state: 'Stable', members: 1 })
  assert.equal(group.coordinator, coordinator, 'the group lives on the new coordinator')
  assert.deepEqual(group.members[0].assignment, { [topic]: [0, 1, 2] })
})
