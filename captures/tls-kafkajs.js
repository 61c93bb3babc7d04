// Kafka over TLS from kafkajs: a producer sends 5 records, a consumer in group
// tls-js-group reads the topic from the beginning. Every TLS socket kafkajs opens writes its
// NSS key log lines (node's 'keylog' event) to KEYLOG.
//
//   node tls-kafkajs.js BOOTSTRAP TOPIC CAFILE KEYLOG [CIPHERS] [resume]
// CIPHERS (OpenSSL names, or '' for the default) narrows what the client offers (TLS 1.3
// suites included). With `resume`, each new socket to a broker offers the session (ticket)
// the last one to it received (node's 'session' event and tls.connect's `session`), so the
// broker resumes it: kafkajs opens several connections to one broker.
const fs = require('fs');
const net = require('net');
const tls = require('tls');
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, cafile, keylog, ciphers, resume] = process.argv.slice(2);
const sessions = new Map();
const ca = fs.readFileSync(cafile);

// kafkajs' own socket factory, with the key log added.
const socketFactory = ({ host, port, ssl, onConnect }) => {
  const where = `${host}:${port}`;
  const session = resume === 'resume' ? sessions.get(where) : undefined;
  const socket = tls.connect(Object.assign({ host, port, servername: net.isIP(host) ? undefined : host, session }, ssl), onConnect);
  socket.on('keylog', (line) => fs.appendFileSync(keylog, line));
  socket.on('session', (s) => sessions.set(where, s));
  socket.setKeepAlive(true, 60000);
  return socket;
};

async function main() {
  const kafka = new Kafka({
    clientId: 'tls-js',
    brokers: [bootstrap],
    ssl: Object.assign({ ca: [ca], checkServerIdentity: () => undefined }, ciphers ? { ciphers } : {}),
    socketFactory,
    logLevel: logLevel.ERROR,
  });
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < 5; i++) {
    await producer.send({ topic, acks: -1, messages: [{ key: `js-${i}`, value: `kafkajs over tls, record ${i}`, partition: i % 2 }] });
  }
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: 'tls-js-group', maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let got = 0;
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, 15000);
    consumer.run({
      eachMessage: async () => {
        got += 1;
        if (got >= 25) { clearTimeout(timer); resolve(); }
      },
    });
  });
  await consumer.disconnect();
  console.log(`kafkajs read ${got} records`);
}

main().catch((e) => { console.error(e); process.exit(1); });
