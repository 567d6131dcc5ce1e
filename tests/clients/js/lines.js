// What the kafkajs command drivers (groups.js, transactions.js, admin.js) share: JSON lines out,
// kafkajs's log as JSON on stderr, the client they make, how they describe a kafkajs error,
// bounded waits, and the loop that answers one stdin command at a time.
'use strict'

const readline = require('readline')

const T0 = Date.now()

const out = obj => process.stdout.write(JSON.stringify({ t: Date.now() - T0, ...obj }) + '\n')
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const str = buf => (buf == null ? null : Buffer.from(buf).toString('utf8'))

const stderrLogCreator = () => ({ namespace, label, log }) => {
  const { message, ...extra } = log
  process.stderr.write(JSON.stringify({ t: Date.now() - T0, level: label, namespace, message, ...extra }) + '\n')
}

// A kafkajs client of the drivers' settings (short timeouts, the driver's retries and log level).
function kafkaClient(clientId, bootstrap, retry, logLevel) {
  const { Kafka } = require('kafkajs')
  return new Kafka({
    clientId,
    brokers: bootstrap.split(','),
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry,
    logLevel,
    logCreator: stderrLogCreator,
  })
}

// What a kafkajs error looks like, with the chain of causes (KafkaJSNonRetriableError wraps the
// protocol error it gave up on).
function describeKafkaError(e) {
  if (!e) return null
  return { name: e.name, type: e.type || null, code: e.code ?? null, retriable: e.retriable ?? null,
    message: String(e.message), cause: describeKafkaError(e.cause || e.originalError) }
}

async function until(what, timeoutMs, check, stepMs = 50) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(stepMs)
  }
}

// Answer each stdin line {"id", "cmd", ...args} with {"type": "reply", "id", ...result} (or
// "error": describeError(e)), one command at a time and in order; "exit" or the end of stdin ends
// the process, and so does the watchdog after watchdogMs, whatever happens.
function serve(name, commands, { watchdogMs, describeError }) {
  const watchdog = setTimeout(() => {
    process.stderr.write(JSON.stringify({ level: 'FATAL', message: `${name} did not finish in ${watchdogMs} ms` }) + '\n')
    process.exit(2)
  }, watchdogMs)
  const rl = readline.createInterface({ input: process.stdin })
  let queue = Promise.resolve()
  rl.on('line', line => {
    if (!line.trim()) return
    const { id, cmd, ...args } = JSON.parse(line)
    queue = queue.then(async () => {
      if (!commands[cmd]) {
        out({ type: 'reply', id, error: { message: `unknown command ${cmd}` } })
        return
      }
      try {
        const result = await commands[cmd](args)
        out({ type: 'reply', id, ...result })
      } catch (e) {
        out({ type: 'reply', id, error: describeError(e) })
      }
      if (cmd === 'exit') {
        clearTimeout(watchdog)
        process.exit(0)
      }
    })
  })
  rl.on('close', () => {
    queue.then(() => {
      clearTimeout(watchdog)
      process.exit(0)
    })
  })
}

module.exports = { T0, out, sleep, str, stderrLogCreator, kafkaClient, describeKafkaError, until, serve }
