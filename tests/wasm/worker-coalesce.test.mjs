// The worker's request coalescing (web/src/worker/coalesce.ts) and its client (client.ts)
// over an in-process port (a MessageChannel standing in for the Worker): requests on a
// channel are coalesced, stale ones reject with AbortError and never run.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { load } from './helpers.mjs';
import { base } from './bad-inputs.mjs';
import { Coalescer, StaleRequestError, handle, out, transferables } from './worker-build.mjs';

const qk = await load();
const now = () => performance.now();

describe('coalescing', () => {
  /** A request that resolves when told to; records that it started. */
  function deferred(log, name) {
    let resolve;
    const p = new Promise((r) => (resolve = r));
    return { start: () => (log.push(name), p), resolve };
  }

  test('while one request runs, newer ones replace the waiting one; stale ones never start', async () => {
    const c = new Coalescer();
    const log = [];
    const a = deferred(log, 'a'), b = deferred(log, 'b'), d = deferred(log, 'd');
    const pa = c.submit('s', a.start);
    const pb = c.submit('s', b.start);
    const pd = c.submit('s', d.start);
    assert.deepEqual(log, ['a'], 'only the first runs');
    assert.equal(c.pending('s'), 1);
    await assert.rejects(pb, (e) => e instanceof StaleRequestError && e.name === 'AbortError');
    a.resolve(1);
    assert.equal(await pa, 1);
    await new Promise((r) => setTimeout(r, 0));
    assert.deepEqual(log, ['a', 'd'], 'b was dropped, d ran next');
    d.resolve(3);
    assert.equal(await pd, 3);
    assert.equal(c.pending('s'), 0);
  });

  test('channels are independent; no channel means no coalescing; a failure frees the channel', async () => {
    const c = new Coalescer();
    const log = [];
    const a = deferred(log, 'a'), b = deferred(log, 'b');
    c.submit('x', a.start);
    c.submit('y', b.start);
    const free = [c.submit(undefined, async () => 1), c.submit(undefined, async () => 2)];
    assert.deepEqual(await Promise.all(free), [1, 2]);
    assert.deepEqual(log, ['a', 'b']);
    const failing = c.submit('z', () => { throw new RangeError('bad'); });
    await assert.rejects(failing, RangeError);
    assert.equal(await c.submit('z', async () => 'next'), 'next');
  });

  test('the client over a MessageChannel: results, RangeErrors and coalescing end to end', async () => {
    const { QkWorker } = await import(pathToFileURL(join(out, 'worker/client.js')).href);
    const { port1, port2 } = new MessageChannel();
    let served = 0;
    port2.onmessage = async (e) => {
      served++;
      const res = await handle(e.data, qk, now);
      port2.postMessage(res, transferables(res.ok ? res.value : null));
    };
    const w = new QkWorker({
      postMessage: (m) => port1.postMessage(m),
      addEventListener: (type, l) => (type === 'message' ? (port1.onmessage = l) : undefined),
    });
    const r = await w.call('forward', [base()]);
    assert.deepEqual(r.output, qk.forward(base()).output);
    await assert.rejects(w.call('attention', [{ ...base(), temprature: 1 }]),
      (e) => e instanceof RangeError && /unknown option 'temprature'/.test(e.message));
    const t = await w.time('attention', [base()], 3, 1e9);
    assert.equal(t.times.length, 3);
    served = 0;
    const calls = [1, 2, 3, 4, 5].map((k) => w.call('forward', [{ ...base(), temperature: k }], 'slider'));
    const settled = await Promise.allSettled(calls);
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    assert.equal(served, 2, 'the three stale requests never reached the worker');
    assert.deepEqual(settled[4].value.output, qk.forward({ ...base(), temperature: 5 }).output);
    port1.close();
  });
});
