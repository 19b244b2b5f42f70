// An independent load generator for ingest (issue 63), written apart from the Rust bench so
// that the two check each other: Node's own HTTP client (keep-alive) and Ed25519, each push
// built with JSON.stringify as an agent builds its batch — one sample of each of SERIES stable
// series (names and labels like an agent's: cpu per core, disks per mount, interfaces) at the
// push's time — and signed. Run by hand (bench/ingest_compare.sh runs it):
//   node bench/independent_push.mjs hub http://127.0.0.1:18181 'bench password'
//   node bench/independent_push.mjs vm  http://127.0.0.1:18428
// Environment: AGENTS=128 CONC=64 DUR=20 SERIES=100 SHAPE=agent|bench. Prints samples/s, p50/p99 and its own CPU.
import crypto from 'node:crypto';
import http from 'node:http';

const [mode, base, password] = process.argv.slice(2);
const AGENTS = Number(process.env.AGENTS ?? 128);
const CONC = Number(process.env.CONC ?? 64);
const DUR = Number(process.env.DUR ?? 20);
const SERIES = Number(process.env.SERIES ?? 100);
const agent = new http.Agent({ keepAlive: true, maxSockets: CONC });

function request(method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

// The series an agent with this many samples sends: named as the agent names them.
const families = [
  ['cpu.percent', (i) => ({ cpu: String(i) })],
  ['disk.used_bytes', (i) => ({ mount: `/srv/vol${i}` })],
  ['net.rx_bytes', (i) => ({ iface: `eth${i}` })],
  ['net.tx_bytes', (i) => ({ iface: `eth${i}` })],
  ['mem.used_bytes', () => ({})],
];
// SHAPE=bench: the Rust bench's series instead (`bench.metric_<i>`, no labels), to tell the
// generator's part from the shape's.
const series = Array.from({ length: SERIES }, (_, i) => {
  if (process.env.SHAPE === 'bench') return { name: `bench.metric_${i}`, labels: {} };
  const [name, labels] = families[i % families.length];
  return { name, labels: labels(Math.floor(i / families.length)) };
});

function sign(key, body) {
  return 'ed25519=' + crypto.sign(null, Buffer.from(body), key).toString('base64');
}

async function agents() {
  const login = await request('POST', '/api/v1/auth/login', { 'content-type': 'application/json' },
    JSON.stringify({ email: 'admin@trusthub.local', password }));
  const cookie = String(login.headers['set-cookie']).split(';')[0];
  const enroll = JSON.parse((await request('POST', '/api/v1/agents/enrollment-tokens',
    { 'content-type': 'application/json', cookie }, '{}')).body).token;
  const out = [];
  for (let i = 0; i < AGENTS; i++) {
    const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
    const body = JSON.stringify({ machine_id: `independent-${crypto.randomUUID()}`, hostname: `ind-${i}`,
      os: 'bench', arch: 'x86_64', agent_version: 'bench', signing_pubkey: raw });
    const r = await request('POST', '/api/v1/agents/register', { authorization: `Bearer ${enroll}`,
      'content-type': 'application/json', 'x-service-signature': sign(privateKey, body) }, body);
    if (r.status !== 201 && r.status !== 200) throw new Error(`register: ${r.status} ${r.body}`);
    out.push({ key: privateKey, token: JSON.parse(r.body).agent_token });
  }
  return out;
}

async function main() {
  const fleet = mode === 'hub' ? await agents() : Array.from({ length: AGENTS }, () => ({}));
  const lat = [];
  let errors = 0; let seq = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now(); const end = start + DUR * 1000;
  async function worker(w) {
    for (let i = w; performance.now() < end; i += CONC) {
      const a = i % AGENTS; const now = Date.now() + (seq++ % 1000);
      let r; const t0 = performance.now();
      if (mode === 'hub') {
        const body = JSON.stringify({ batch_id: crypto.randomUUID(), sent_at: new Date().toISOString(),
          metrics: series.map((s, k) => ({ name: s.name, ts: new Date(now).toISOString(), value: k + Math.random(), labels: s.labels })) });
        r = await request('POST', '/api/v1/ingest', { authorization: `Bearer ${fleet[a].token}`,
          'content-type': 'application/json', 'x-service-signature': sign(fleet[a].key, body) }, body);
        if (r.status !== 202) { if (errors++ < 3) console.error(r.status, r.body); continue; }
      } else {
        const body = series.map((s, k) => JSON.stringify({ metric: { __name__: s.name.replaceAll('.', '_'), agent: `a${a}`, ...s.labels },
          values: [k + Math.random()], timestamps: [now] })).join('\n');
        r = await request('POST', '/api/v1/import', { 'content-type': 'application/json' }, body);
        if (r.status !== 204) { if (errors++ < 3) console.error(r.status, r.body); continue; }
      }
      lat.push(performance.now() - t0);
    }
  }
  await Promise.all(Array.from({ length: CONC }, (_, w) => worker(w)));
  const secs = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0); const used = (cpu.user + cpu.system) / 1e6;
  lat.sort((x, y) => x - y);
  const p = (q) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]?.toFixed(1);
  const samples = lat.length * SERIES;
  console.log(`independent ${mode}: ${lat.length} pushes in ${secs.toFixed(1)} s = ${(samples / secs).toFixed(0)} samples/s; p50 ${p(0.5)} ms, p99 ${p(0.99)} ms; errors ${errors}; generator CPU ${used.toFixed(2)} s = ${(used * 1e6 / Math.max(samples, 1)).toFixed(2)} µs per sample`);
}

main().catch((e) => { console.error(e); process.exit(1); });
