// run.mjs runs one scenario of bench/peers natively on BullMQ, handlers in
// JS and no call back into Go per job, and prints its result as one JSON
// line on stdout (the idle scenario prints {"ready":true} first):
//
//	node bullmq/run.mjs <scenario> '<json args>'
//
// The Go side (bench/peers/bullmq.go) measures Redis around each run and
// flushes it between runs; this process reports what only it can see: its
// throughput, its own CPU (process.cpuUsage, user + system) and latency
// samples. Every job has removeOnComplete, so that a finished job is
// deleted as asynq and Overtake delete theirs. The three priorities of the
// bench map to explicit BullMQ priorities: urgent 1, normal 2, low 3.
import { Queue, Worker } from 'bullmq';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

const QUEUE = 'peers';
const PRIORITY = [3, 2, 1]; // by the bench's priority: 0 low, 1 normal, 2 urgent
const PENDING = ['wait', 'active', 'delayed', 'prioritized', 'paused', 'waiting-children'];

const [scenario, raw] = process.argv.slice(2);
const args = JSON.parse(raw ?? '{}');
const connection = { host: args.host ?? '127.0.0.1', port: args.port, maxRetriesPerRequest: null };

/** jobOpts are the options of a job of priority p (0 low, 1 normal, 2 urgent). */
const jobOpts = (p, extra = {}) => ({ priority: PRIORITY[p], removeOnComplete: true, ...extra });

/** cpuMs is this process's CPU (user + system) since start, in ms. */
const cpuMs = (start) => {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};

/** parallel runs fn(i) for every i in [0, n) from g async callers. */
async function parallel(n, g, fn) {
  let next = 0;
  const caller = async () => {
    for (let i = next++; i < n; i = next++) await fn(i);
  };
  await Promise.all(Array.from({ length: Math.min(g, n) }, caller));
}

/** left counts the jobs not yet done: pending, running, delayed. */
const left = (queue) => queue.getJobCountByTypes(...PENDING);

/** counter resolves done at the want-th hit. */
function counter(want) {
  let n = 0;
  let resolve;
  const done = new Promise((r) => (resolve = r));
  return { done, hit: () => ++n === want && resolve() };
}

/** untilEmpty polls the queue's counts until no job is left (the last completions landed). */
async function untilEmpty(queue, limitMs) {
  const deadline = performance.now() + limitMs;
  while ((await left(queue)) > 0) {
    if (performance.now() > deadline) throw new Error(`jobs left after ${limitMs} ms`);
    await sleep(1);
  }
}

/** within rejects after ms unless p settles first. */
function within(p, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * starts records handler starts of latency samples (job data {i}) and lets
 * a sampler wait for sample i, whether it started before or after the wait.
 */
function starts() {
  const at = new Map();
  const waiting = new Map();
  return {
    hit(i) {
      const t = performance.now();
      if (waiting.has(i)) waiting.get(i)(t);
      else at.set(i, t);
    },
    // wait resolves to [latency ms from sent, capped?].
    async wait(i, sent, capMs) {
      if (!at.has(i)) {
        const t = await new Promise((resolve) => {
          waiting.set(i, resolve);
          setTimeout(() => resolve(null), Math.max(capMs - (performance.now() - sent), 0));
        });
        waiting.delete(i);
        if (t === null) return [capMs, true];
        at.set(i, t);
      }
      return [Math.max(at.get(i) - sent, 0), false];
    },
  };
}

const scenarios = {
  // fill adds n pending jobs with payload, priorities in turn, with addBulk
  // of args.batch jobs: the set-up of a figure, not timed.
  async fill(queue, { n, payload = '', batch = 1000 }) {
    for (let i = 0; i < n; i += batch) {
      const jobs = [];
      for (let j = i; j < Math.min(i + batch, n); j++) jobs.push({ name: 'noop', data: payload, opts: jobOpts(j % 3) });
      await queue.addBulk(jobs);
    }
    return { left: await left(queue) };
  },

  // work runs a worker of concurrency conc while n jobs are added one add
  // each from 16 callers, until every job ran and the worker closed.
  async work(queue, { n, conc, limit_ms }) {
    const ran = counter(n);
    const worker = new Worker(QUEUE, async () => ran.hit(), { connection, concurrency: conc });
    await parallel(n, 16, (i) => queue.add('noop', '', jobOpts(i % 3)));
    await within(ran.done, limit_ms, 'work');
    await worker.close();
    return { left: await left(queue) };
  },

  // enqueue adds n payload-less jobs, priorities in turn, one add each
  // from g callers: jobs per second and this process's CPU.
  async enqueue(queue, { n, g }) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await parallel(n, g, (i) => queue.add('noop', '', jobOpts(i % 3)));
    return { rate: n / ((performance.now() - t0) / 1000), cpu_ms: cpuMs(cpu0) };
  },

  // batch adds n payload-less jobs with addBulk of size jobs each (one
  // priority a call, in turn) from g callers.
  async batch(queue, { n, g, size }) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await parallel(Math.ceil(n / size), g, (b) => {
      const jobs = [];
      for (let j = b * size; j < Math.min((b + 1) * size, n); j++) jobs.push({ name: 'noop', data: '', opts: jobOpts(b % 3) });
      return queue.addBulk(jobs);
    });
    return { rate: n / ((performance.now() - t0) / 1000), cpu_ms: cpuMs(cpu0) };
  },

  // drain times a worker of concurrency conc over n pre-added no-op jobs,
  // from its start until every job ran and none is left; its CPU covers
  // the worker's start and close too.
  async drain(queue, { n, conc, limit_ms }) {
    const ran = counter(n);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const worker = new Worker(QUEUE, async () => ran.hit(), { connection, concurrency: conc });
    await within(ran.done, limit_ms, 'drain');
    await untilEmpty(queue, limit_ms);
    const rate = n / ((performance.now() - t0) / 1000);
    await worker.close();
    return { rate, cpu_ms: cpuMs(cpu0) };
  },

  // idle starts a worker at BullMQ's defaults, says it is ready, and
  // closes it when stdin ends: the Go side counts Redis commands between.
  async idle() {
    const worker = new Worker(QUEUE, async () => {}, { connection });
    await worker.waitUntilReady();
    console.log(JSON.stringify({ ready: true }));
    process.stdin.resume();
    await once(process.stdin, 'end');
    await worker.close();
    return {};
  },

  // urgent keeps the 4 slots of a worker full of low jobs of low_ms, each
  // adding its successor as it ends, and adds urgent jobs one at a time,
  // each at a random moment of the low jobs' run: BullMQ has no
  // preemption, so an urgent job waits for a slot to free, then its
  // priority makes it the next one to run.
  async urgent(queue, { samples, low_ms, cap_ms, limit_ms }) {
    let running = 0;
    let stopping = false;
    const st = starts();
    const low = () => queue.add('low', '', jobOpts(0, { attempts: 1 }));
    const worker = new Worker(QUEUE, async (job) => {
      if (job.name !== 'low') return st.hit(job.data.i);
      running++;
      await sleep(low_ms);
      running--;
      if (!stopping) await low(); // keep the low work coming, so the slots stay full
    }, { connection, concurrency: 4 });
    for (let k = 0; k < 4 + 4; k++) await low(); // the 4 slots full, and more waiting
    const lat = [];
    let capped = 0;
    for (let i = 0; i < samples; i++) {
      for (const deadline = performance.now() + limit_ms; running < 4; await sleep(1)) {
        if (performance.now() > deadline) throw new Error('urgent: the 4 slots did not fill');
      }
      await sleep(Math.random() * low_ms); // a random moment of the low jobs' run
      await queue.add('noop', { i }, jobOpts(2));
      const [d, hit] = await st.wait(i, performance.now(), cap_ms);
      lat.push(d);
      if (hit) capped++;
    }
    stopping = true;
    await worker.close(true); // the low jobs left running are flushed by the Go side
    return { lat_ms: lat, capped };
  },

  // wake samples add-returned → handler-start latency on an idle worker of
  // 4 slots, the samples a random 0..gap_ms apart.
  async wake(queue, { samples, gap_ms, cap_ms }) {
    const st = starts();
    const worker = new Worker(QUEUE, async (job) => st.hit(job.data.i), { connection, concurrency: 4 });
    await worker.waitUntilReady();
    const lat = [];
    let capped = 0;
    for (let i = 0; i < samples; i++) {
      await sleep(Math.random() * gap_ms); // a random phase of the worker's idle loop
      await queue.add('noop', { i }, jobOpts(1));
      const [d, hit] = await st.wait(i, performance.now(), cap_ms);
      lat.push(d);
      if (hit) capped++;
    }
    await worker.close();
    return { lat_ms: lat, capped };
  },
};

async function main() {
  const fn = scenarios[scenario];
  if (!fn) throw new Error(`unknown scenario ${JSON.stringify(scenario)}`);
  const queue = new Queue(QUEUE, { connection });
  try {
    const out = await fn(queue, args);
    console.log(JSON.stringify(out));
  } finally {
    await queue.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.log(JSON.stringify({ error: String(err?.stack ?? err) }));
    process.exit(1);
  },
);
