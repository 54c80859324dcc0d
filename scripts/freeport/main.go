package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
)

func main() { os.Exit(runMain()) }

// runMain is main with an exit code, so that its deferred calls run
// before the process exits.
func runMain() int {
	n := flag.Int("n", 1, "number of distinct ports")
	bus := flag.Bool("bus", false, "also require port+10000 to be free")
	flag.Parse()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < *n; tries++ {
		if tries > 100**n {
			fmt.Fprintln(os.Stderr, "freeport: no free loopback ports found")
			return 1
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			return 1
		}
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		if *bus {
			if p+10000 > 65535 {
				continue
			}
			b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
			if err != nil {
				continue
			}
			held = append(held, b)
		}
		ports = append(ports, p)
	}
	for _, p := range ports {
		fmt.Println(p)
	}
	return 0
}
