package redisproc

import (
	"errors"
	"net"
	"strconv"
)

// busOffset is the distance of a Redis Cluster node's bus port from its
// client port.
const busOffset = 10000

// FreePort returns a 127.0.0.1 TCP port that was free a moment ago. With
// bus, port+10000 (the Redis Cluster bus port) was free too.
func FreePort(bus bool) (int, error) {
	ports, err := FreePorts(1, bus)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts returns n distinct 127.0.0.1 TCP ports that were free a moment
// ago: all are held open together while they are chosen. With bus,
// port+10000 of each was free too.
func FreePorts(n int, bus bool) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries >= 100*n {
			return nil, errors.New("redisproc: no free loopback port found")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if bus {
			if port+busOffset > 65535 {
				continue
			}
			b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+busOffset)))
			if err != nil {
				continue
			}
			held = append(held, b)
		}
		ports = append(ports, port)
	}
	return ports, nil
}
