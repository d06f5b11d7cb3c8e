// Package broker serves a commitlog.Store to Kafka clients over Kafka's wire protocol: a
// single-node Kafka cluster in a Go process, durable, compacted and transactional because the
// store is. franz-go, librdkafka (kcat), the Java client and kafkajs produce, consume, join
// consumer groups and run transactions against it unchanged.
//
// Serve answers on a net.Listener until its context ends:
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:9092")
//	err := broker.Serve(ctx, ln, store, broker.Config{})
//
// Requests and responses are encoded with franz-go's kmsg, generated from Kafka's own JSON
// message specs. Each connection has one goroutine that reads requests ahead (clients pipeline)
// and one that answers them in order, as Kafka's SocketServer does. One file holds each API's
// handler, named for the API; api.go lists the versions served (what ApiVersions advertises).
//
// The broker translates; it does not reimplement: produce goes through
// commitlog.Partition.AppendAsLeader (idempotence and transactions are checked there), fetch
// sends the stored batches with Partition.ReadRangeBelow (sendfile on Linux), consumer groups
// are the store's group.Coordinator, and transactions its transaction coordinator.
//
// Config.TLS serves TLS (LoadTLSConfig reads a PEM certificate and key), and Config.SASL
// requires SASL authentication with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (LoadSASLConfig reads
// a credentials file; its format is in SASLConfig's documentation): Kafka's SSL, SASL_PLAINTEXT
// and SASL_SSL listeners.
package broker
