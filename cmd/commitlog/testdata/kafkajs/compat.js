'use strict'

// kafkajs against 'commitlog serve': run by cmd/commitlog/serve_kafkajs_test.go, which asserts
// every value this script prints.
//
//   node compat.js BROKER MODE [ARGS...]
//
// MODE is one of:
//   records             admin creates kjs-records (3 partitions); an idempotent and a default
//                       producer send keyed records with headers, plain and GZIP; a consumer
//                       group reads them from the beginning; the group's committed offsets
//                       and the topic's offsets.
//   transaction         a transactional producer commits, aborts and commits again (with the
//                       consumer offsets of a group in the first transaction); a read_committed
//                       and a read_uncommitted consumer group read the topic.
//   admin BASE_MS       admin calls on a topic created with a config, with records timestamped
//                       from BASE_MS: topic offsets (by timestamp too), describeConfigs,
//                       deleteTopicRecords, createPartitions, topic metadata, listTopics,
//                       listGroups, describeGroups, deleteGroups, describeCluster,
//                       deleteTopics.
//   sasl MECHANISM USER PASSWORD
//                       authenticates with SASL (plain, scram-sha-256 or scram-sha-512), then
//                       creates kjs-sasl-MECHANISM, produces one record and reads its offsets;
//                       a failed authentication is the step authError.
//
// Each result is one JSON line on standard output: {"step": NAME, "data": ...}. The last line
// is {"step": "versions", "data": {API: [versions...]}}: every request version kafkajs sent,
// read from its debug log ("Request Produce(key: 0, version: 7)"). Warnings and errors of
// kafkajs go to standard error (every log line with KAFKAJS_DEBUG=1). Any failure exits 1.

const { Kafka, logLevel, CompressionTypes, Partitioners, ConfigResourceTypes } = require('kafkajs')

const [broker, mode, ...args] = process.argv.slice(2)

const versions = {}
const requestRE = /^Request (\w+)\(key: (\d+), version: (\d+)\)$/

const logCreator = () => ({ namespace, level, log }) => {
  const m = requestRE.exec(log.message)
  if (m) {
    const seen = (versions[m[1]] = versions[m[1]] || [])
    const v = Number(m[3])
    if (!seen.includes(v)) {
      seen.push(v)
      seen.sort((a, b) => a - b)
    }
  }
  if (level <= logLevel.WARN || process.env.KAFKAJS_DEBUG) {
    const { message, ...extra } = log
    process.stderr.write(`kafkajs ${namespace}: ${message} ${JSON.stringify(extra)}\n`)
  }
}

const kafka = new Kafka({
  clientId: 'commitlog-kafkajs',
  brokers: [broker],
  logLevel: logLevel.DEBUG,
  logCreator,
  // sasl mode: MECHANISM USER PASSWORD, and no retry of a failed authentication.
  ...(mode === 'sasl'
    ? {
        sasl: { mechanism: args[0], username: args[1], password: args[2] },
        retry: { retries: 0 },
      }
    : {}),
})

function out(step, data) {
  process.stdout.write(JSON.stringify({ step, data }) + '\n')
}

const byPartition = (a, b) => a.partition - b.partition

// sendResult keeps what a test asserts of producer.send's RecordMetadata.
function sendResult(metadata) {
  return metadata
    .map(({ topicName, partition, errorCode, baseOffset }) => ({
      topicName,
      partition,
      errorCode,
      baseOffset,
    }))
    .sort(byPartition)
}

// headerStrings turns a consumed message's headers (Buffer, or an array for a repeated key)
// into strings.
function headerStrings(headers) {
  const h = {}
  for (const [k, v] of Object.entries(headers || {})) {
    h[k] = Array.isArray(v) ? v.map(String) : String(v)
  }
  return h
}

// consume runs a consumer group on topic from the beginning until done(records, committed)
// says so, and returns the records it read (sorted by partition and offset). committed maps
// each partition to the last offset the consumer committed (its COMMIT_OFFSETS events).
async function consume(config, topic, done) {
  const consumer = kafka.consumer({ maxWaitTimeInMs: 500, ...config })
  const records = []
  const committed = {}
  let finish
  let fail
  const finished = new Promise((resolve, reject) => {
    finish = resolve
    fail = reject
  })
  const check = () => {
    if (done(records, committed)) finish()
  }
  consumer.on(consumer.events.COMMIT_OFFSETS, ({ payload }) => {
    for (const t of payload.topics) {
      if (t.topic !== topic) continue
      for (const p of t.partitions) committed[p.partition] = p.offset
    }
    check()
  })
  consumer.on(consumer.events.CRASH, ({ payload }) => fail(payload.error))
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      records.push({
        partition,
        offset: message.offset,
        key: message.key === null ? null : message.key.toString(),
        value: message.value === null ? null : message.value.toString(),
        headers: headerStrings(message.headers),
      })
      check()
    },
  })
  await finished
  await consumer.disconnect()
  return records.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset))
}

// fetchOffsets returns a group's committed offsets of topic, by partition.
async function fetchOffsets(admin, groupId, topic) {
  const res = await admin.fetchOffsets({ groupId, topics: [topic] })
  return res.map(({ topic, partitions }) => ({
    topic,
    partitions: partitions
      .map(({ partition, offset, metadata }) => ({ partition, offset, metadata }))
      .sort(byPartition),
  }))
}

async function records() {
  const topic = 'kjs-records'
  const admin = kafka.admin()
  await admin.connect()
  out('createTopics', await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] }))
  out('createTopicsAgain', await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] }))

  const messages = (prefix, extraHeaders) =>
    [0, 1, 2, 3, 4, 5].map(i => ({
      key: `key-${i}`,
      value: `${prefix}-${i}`,
      headers: { source: 'kafkajs', i: String(i), ...extraHeaders },
    }))
  const producers = {
    idempotent: kafka.producer({
      idempotent: true,
      createPartitioner: Partitioners.DefaultPartitioner,
    }),
    default: kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner }),
  }
  for (const [name, producer] of Object.entries(producers)) {
    await producer.connect()
    for (const [codec, compression] of [
      ['none', CompressionTypes.None],
      ['gzip', CompressionTypes.GZIP],
    ]) {
      const extra = codec === 'gzip' ? { trace: ['a', 'b'] } : {}
      const res = await producer.send({
        topic,
        compression,
        messages: messages(`${name}-${codec}`, extra),
      })
      out('send', { producer: name, codec, metadata: sendResult(res) })
    }
    await producer.disconnect()
  }

  const ends = {}
  const topicOffsets = (await admin.fetchTopicOffsets(topic)).sort(byPartition)
  for (const { partition, high } of topicOffsets) ends[partition] = high
  out('fetchTopicOffsets', topicOffsets)

  const total = 24
  const read = await consume({ groupId: 'kjs-records-group' }, topic, (records, committed) => {
    if (records.length < total) return false
    return Object.entries(ends).every(([p, end]) => end === '0' || committed[p] === end)
  })
  out('consumed', read)
  out('fetchOffsets', await fetchOffsets(admin, 'kjs-records-group', topic))
  await admin.disconnect()
}

async function transaction() {
  const topic = 'kjs-txn'
  const admin = kafka.admin()
  await admin.connect()
  out('createTopics', await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] }))

  const producer = kafka.producer({
    transactionalId: 'kjs-txn-producer',
    maxInFlightRequests: 1,
    idempotent: true,
    createPartitioner: Partitioners.DefaultPartitioner,
  })
  await producer.connect()
  const send = async (txn, values, compression) =>
    sendResult(
      await txn.send({
        topic,
        compression,
        messages: values.map(v => ({ key: v, value: v, headers: { txn: 'kafkajs' } })),
      })
    )

  let txn = await producer.transaction()
  const first = await send(txn, ['committed-0', 'committed-1'])
  await txn.sendOffsets({
    consumerGroupId: 'kjs-txn-offsets',
    topics: [{ topic, partitions: [{ partition: 0, offset: '2' }] }],
  })
  await txn.commit()
  out('committed', first)

  txn = await producer.transaction()
  const aborted = await send(txn, ['aborted-0', 'aborted-1'])
  await txn.abort()
  out('aborted', aborted)

  txn = await producer.transaction()
  const second = await send(txn, ['committed-2'], CompressionTypes.GZIP)
  await txn.commit()
  out('committed', second)
  await producer.disconnect()

  out('fetchTopicOffsets', (await admin.fetchTopicOffsets(topic)).sort(byPartition))
  out('fetchOffsets', await fetchOffsets(admin, 'kjs-txn-offsets', topic))

  // Both isolation levels at once (each group's first join waits out the broker's initial
  // rebalance delay). Each reads until it has the last committed record, which follows the
  // aborted ones in the log.
  const last = records => records.some(r => r.value === 'committed-2')
  const [committed, uncommitted] = await Promise.all([
    consume({ groupId: 'kjs-txn-read-committed', readUncommitted: false }, topic, last),
    consume({ groupId: 'kjs-txn-read-uncommitted', readUncommitted: true }, topic, last),
  ])
  out('readCommitted', committed)
  out('readUncommitted', uncommitted)
  await admin.disconnect()
}

async function adminMode() {
  const base = Number(args[0])
  if (!Number.isSafeInteger(base)) throw new Error(`admin: BASE_MS ${args[0]} is not a number`)
  const topic = 'kjs-admin'
  const admin = kafka.admin()
  await admin.connect()
  out(
    'createTopics',
    await admin.createTopics({
      topics: [
        { topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '86400000' }] },
      ],
    })
  )

  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const res = await producer.sendBatch({
    topicMessages: [
      {
        topic,
        messages: [
          { partition: 0, value: 't0', timestamp: String(base) },
          { partition: 0, value: 't1', timestamp: String(base + 1000) },
          { partition: 0, value: 't2', timestamp: String(base + 2000) },
          { partition: 1, value: 't5', timestamp: String(base + 5000) },
        ],
      },
    ],
  })
  out('sendBatch', sendResult(res))
  await producer.disconnect()

  out('fetchTopicOffsets', (await admin.fetchTopicOffsets(topic)).sort(byPartition))
  for (const delta of [0, 1000, 1500, 10000]) {
    const offsets = await admin.fetchTopicOffsetsByTimestamp(topic, base + delta)
    out('fetchTopicOffsetsByTimestamp', { delta, offsets: offsets.sort(byPartition) })
  }

  const { resources } = await admin.describeConfigs({
    resources: [
      { type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy'] },
    ],
    includeSynonyms: false,
  })
  out(
    'describeConfigs',
    resources.map(({ errorCode, resourceType, resourceName, configEntries }) => ({
      errorCode,
      resourceType,
      resourceName,
      configEntries: configEntries
        .map(({ configName, configValue, isDefault, configSource, readOnly, isSensitive }) => ({
          configName,
          configValue,
          isDefault,
          configSource,
          readOnly,
          isSensitive,
        }))
        .sort((a, b) => (a.configName < b.configName ? -1 : 1)),
    }))
  )
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '1' }] })
  out('fetchTopicOffsetsAfterDeleteRecords', (await admin.fetchTopicOffsets(topic)).sort(byPartition))
  await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] })
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] })
  out(
    'fetchTopicMetadata',
    topics.map(({ name, partitions }) => ({
      name,
      partitions: partitions
        .map(({ partitionErrorCode, partitionId, leader, replicas, isr }) => ({
          partitionErrorCode,
          partitionId,
          leader,
          replicas,
          isr,
        }))
        .sort((a, b) => a.partitionId - b.partitionId),
    }))
  )
  out('listTopics', (await admin.listTopics()).sort())

  const listGroups = async () =>
    (await admin.listGroups()).groups.sort((a, b) => (a.groupId < b.groupId ? -1 : 1))
  out('listGroups', await listGroups())
  const { groups } = await admin.describeGroups(['kjs-records-group', 'kjs-txn-offsets'])
  out(
    'describeGroups',
    groups.map(({ groupId, errorCode, state, protocolType, protocol, members }) => ({
      groupId,
      errorCode,
      state,
      protocolType,
      protocol,
      members: members.length,
    }))
  )
  out('deleteGroups', await admin.deleteGroups(['kjs-txn-read-uncommitted']))
  out('listGroupsAfterDelete', await listGroups())

  out('describeCluster', await admin.describeCluster())
  await admin.deleteTopics({ topics: [topic] })
  out('listTopicsAfterDelete', (await admin.listTopics()).sort())
  await admin.disconnect()
}

async function sasl() {
  const topic = `kjs-sasl-${args[0].toLowerCase()}`
  const admin = kafka.admin()
  try {
    await admin.connect()
  } catch (e) {
    out('authError', { name: e.name, message: e.message })
    return
  }
  out('createTopics', await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] }))
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  out('send', sendResult(await producer.send({ topic, messages: [{ key: 'k', value: args[0] }] })))
  await producer.disconnect()
  out('fetchTopicOffsets', await admin.fetchTopicOffsets(topic))
  await admin.disconnect()
}

const modes = { records, transaction, admin: adminMode, sasl }

async function main() {
  if (!broker || !modes[mode]) {
    throw new Error(`usage: node compat.js BROKER (${Object.keys(modes).join('|')}) [ARGS...]`)
  }
  await modes[mode]()
  out('versions', versions)
}

main().catch(e => {
  process.stderr.write(`compat.js ${mode}: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
