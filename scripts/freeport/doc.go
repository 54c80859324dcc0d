// Command freeport prints free TCP ports on 127.0.0.1, one per line.
//
//	go run ./scripts/freeport [-n count] [-bus]
//
// The ports are held open together while being chosen, so they are distinct.
// With -bus, port+10000 is free too (the Redis Cluster bus port).
package main
