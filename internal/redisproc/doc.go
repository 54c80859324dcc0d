// Package redisproc starts throwaway redis-server processes on free
// 127.0.0.1 ports for Overtake's tests, benchmarks and chaos suite, and
// finds free loopback ports.
//
// [Start] picks a free port (and, for a cluster node, a free bus port
// +10000), starts redis-server with its data in a directory, and returns
// once the server answers PING. A [Server] can be stopped gracefully,
// killed as a crash would, and restarted on the same port with the same
// data; [Server.Close] ends it for good. [StartCluster] starts masters of a
// Redis Cluster that way and joins them with redis-cli.
//
// Every server listens on 127.0.0.1 only and runs in its own process group
// under timeout(1) when that is installed, so that it goes away by itself
// after its lifetime even if the process that started it is killed; it also
// gets SIGTERM when that process dies (parent-death signal).
package redisproc
