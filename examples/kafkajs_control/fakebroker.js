// A small test helper: runs `fakebroker serve` beside the tests and scripts it over its HTTP
// control endpoint with nothing but Node's built-in child_process and fetch.
//
//   const fb = await FakeBroker.start({ brokers: 3 })
//   fb.bootstrap                      // ['127.0.0.1:40307', ...] for new Kafka({ brokers })
//   await fb.addFault({ api: 'Heartbeat', group: 'orders', error: 'REBALANCE_IN_PROGRESS', times: 3 })
//   await fb.waitFor('group_state', { group: 'orders', state: 'Stable', members: 2 })
//   await fb.stop()
//
// The server command comes from $FAKEBROKER (split on spaces, e.g. "python3 -m fakebroker"),
// else `fakebroker` on the PATH. Every call has a timeout; nothing here sleeps unbounded.
'use strict'

const { spawn } = require('node:child_process')
const readline = require('node:readline')

const START_TIMEOUT_MS = 30000 // a cold Python start on a loaded machine takes a few seconds
const CALL_TIMEOUT_MS = 20000
const KEEP_LINES = 300 // the server's last output lines, for a failing test's message

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

class ControlError extends Error {
  constructor (method, path, status, message) {
    super(`${method} ${path} -> ${status}: ${message}`)
    this.status = status
  }
}

class FakeBroker {
  constructor (child, bootstrap, url, token, lines) {
    this.child = child
    this.bootstrap = bootstrap.split(',')
    this.url = url
    this.token = token
    this.lines = lines
  }

  /** Start `fakebroker serve` on free ports and wait for its `bootstrap:` and `control:` lines. */
  static async start ({ brokers = 3, args = [], timeoutMs = START_TIMEOUT_MS } = {}) {
    const [cmd, ...pre] = (process.env.FAKEBROKER || 'fakebroker').trim().split(/\s+/)
    const child = spawn(cmd, [...pre, 'serve', '--brokers', String(brokers), '--port', '0', '--control-port', '0',
      '--no-color', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    // If this test process dies without calling stop(), take the server with it.
    const reap = () => child.kill('SIGKILL')
    process.once('exit', reap)
    child.once('exit', () => process.removeListener('exit', reap))

    const lines = []
    const keep = line => { lines.push(line); if (lines.length > KEEP_LINES) lines.shift() }
    readline.createInterface({ input: child.stderr }).on('line', line => keep(`stderr: ${line}`))
    // stdout keeps carrying one line per cluster event: always drain it, or the server blocks.
    const out = readline.createInterface({ input: child.stdout })
    const header = await new Promise((resolve, reject) => {
      const got = []
      const done = () => { clearTimeout(timer); child.removeListener('error', onError); child.removeListener('exit', onExit) }
      const fail = why => { done(); child.kill('SIGKILL'); reject(new Error(`fakebroker serve ${why}\n${lines.join('\n')}`)) }
      const onError = err => fail(`could not start (${err.message}); set FAKEBROKER to the command that runs it`)
      const onExit = code => fail(`exited with ${code} before it was ready`)
      const timer = setTimeout(() => fail(`printed no control line within ${timeoutMs} ms`), timeoutMs)
      child.on('error', onError)
      child.on('exit', onExit)
      out.on('line', line => {
        keep(line)
        if (got.length < 2) {
          got.push(line)
          if (got.length === 2) { done(); resolve(got) }
        }
      })
    })
    const bootstrap = header[0].match(/^bootstrap: (\S+)$/)
    const control = header[1].match(/^control: (\S+) token=(\S+)$/)
    if (!bootstrap || !control) {
      child.kill('SIGKILL')
      throw new Error(`unexpected first lines from fakebroker serve: ${JSON.stringify(header)}`)
    }
    return new FakeBroker(child, bootstrap[1], control[1], control[2], lines)
  }

  /** SIGTERM (the server stops cleanly), SIGKILL if it is still there after 10 s. */
  async stop () {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = new Promise(resolve => this.child.once('exit', resolve))
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10000)
    await exited
    clearTimeout(timer)
  }

  /** The server's last output lines (its event log): worth printing when a test fails. */
  tail (n = 80) {
    return this.lines.slice(-n).join('\n')
  }

  // -- the control endpoint ---------------------------------------------------------------------
  async call (method, path, body, timeoutMs = CALL_TIMEOUT_MS) {
    const res = await fetch(this.url + path, {
      method,
      headers: { Authorization: `Bearer ${this.token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs)
    })
    const payload = await res.json()
    if (!res.ok) throw new ControlError(method, path, res.status, payload.error)
    return payload
  }

  createTopic (name, partitions, { replicationFactor = -1, config } = {}) {
    return this.call('POST', '/topics', { name, partitions, replication_factor: replicationFactor, config })
  }

  topic (name) { return this.call('GET', `/topics/${encodeURIComponent(name)}`) }

  /** A fault rule: the body is `cluster.faults.add`'s keyword arguments (api, group, error, action, times, ...). */
  addFault (rule) { return this.call('POST', '/faults', rule) }
  fault (id) { return this.call('GET', `/faults/${id}`) }
  removeFault (id) { return this.call('DELETE', `/faults/${id}`) }
  clearFaults () { return this.call('DELETE', '/faults') }

  /** Stop a broker as if its process died; resolves once its port is closed. */
  stopBroker (id) { return this.call('POST', `/brokers/${id}/stop`) }
  /** Start it again on the same port; resolves once it listens. */
  startBroker (id) { return this.call('POST', `/brokers/${id}/start`) }
  electPreferredLeaders () { return this.call('POST', '/leaders/preferred') }
  async brokers () { return (await this.call('GET', '/brokers')).brokers }

  /** The group as the coordinator sees it (state, generation, coordinator, members with assignments); null if unknown. */
  async group (id) {
    try {
      return await this.call('GET', `/groups/${encodeURIComponent(id)}`)
    } catch (err) {
      if (err.status === 404) return null
      throw err
    }
  }

  /** Committed offsets as { 'topic/partition': offset }. */
  async committed (groupId) {
    try {
      const { offsets } = await this.call('GET', `/groups/${encodeURIComponent(groupId)}/offsets`)
      return Object.fromEntries(offsets.map(o => [`${o.topic}/${o.partition}`, o.offset]))
    } catch (err) {
      if (err.status === 404) return {}
      throw err
    }
  }

  /** Move a group's coordinator (default: the next live broker); it answers COORDINATOR_LOAD_IN_PROGRESS for loadTimeMs. */
  moveCoordinator (groupId, { broker, loadTimeMs } = {}) {
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/coordinator`, { broker, load_time_ms: loadTimeMs })
  }

  async events (filter = {}) {
    const query = new URLSearchParams(Object.entries(filter).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]))
    return (await this.call('GET', `/events?${query}`)).events
  }

  /**
   * Wait on the server for a condition: group_state {group, state?, members?, generation_above?},
   * generation_above {group, generation}, event {kind, details?}, member_expired {group, client_id},
   * committed_offset {group, topic, partition, at_least}. Resolves with what matched; rejects
   * (HTTP 408) after `timeout` seconds with what the server saw last.
   */
  async waitFor (condition, { timeout = 15, ...params } = {}) {
    const { result } = await this.call('POST', '/wait', { condition, timeout, ...params }, (timeout + 10) * 1000)
    return result
  }

  /** Poll any check (a group view, a counter in the test) until it returns something truthy. */
  async until (what, check, { timeoutMs = 15000, intervalMs = 100 } = {}) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = await check()
      if (value) return value
      if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
      await sleep(intervalMs)
    }
  }
}

module.exports = { FakeBroker, ControlError, sleep }
