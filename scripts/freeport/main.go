package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/overtake/overtake/internal/redisproc"
)

func main() {
	n := flag.Int("n", 1, "number of distinct ports")
	bus := flag.Bool("bus", false, "also require port+10000 to be free")
	flag.Parse()
	ports, err := redisproc.FreePorts(*n, *bus)
	if err != nil {
		fmt.Fprintln(os.Stderr, "freeport:", err)
		os.Exit(1)
	}
	for _, p := range ports {
		fmt.Println(p)
	}
}
