// Package mirror copies topics between a commitlog.Store and a Kafka cluster, exactly once, with
// franz-go's kgo client: Push ships local topics to a cluster (store-and-forward from an edge
// machine), Pull follows a cluster's topics into a local store (a local read replica). Each is a
// long-running job that returns when its context ends and resumes where it stopped when run
// again, also after the process was killed.
//
// Records keep their key, value, headers and timestamp. A partition maps to the same partition
// number when both sides have as many, else by key with Kafka's murmur2 (the Java client's
// placement). Topic names can be renamed with a prefix (MirrorMaker's "source.topic" style).
package mirror
