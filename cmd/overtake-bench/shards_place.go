package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/overtake/overtake/internal/store"
)

// Where a queue's shards land: shard k's keys share the hash tag
// store.ShardTag, and Redis Cluster maps a tag to a slot by CRC16, so which
// master holds which shard depends on the queue's name. With random names,
// 3 shards land one per master of 3 only 2 times in 9.

// The placements of --shard-placement.
const (
	placeBalanced = "balanced" // a queue name whose tags spread evenly over the masters
	placeRandom   = "random"   // the plain name, wherever its tags land
)

// maxPlaceTries bounds the queue names tried for a balanced placement.
const maxPlaceTries = 10_000

// slotRange is a range of hash slots, both ends included.
type slotRange struct{ start, end int }

// queueName returns the name of K's queue and the number of its hash tags
// each master should hold. With placeBalanced it tries "k<K>-shards",
// "k<K>-shards-1", ... until no master holds more than ceil(K/masters)
// tags.
func (s *shardBench) queueName(k int) (string, []int) {
	base := fmt.Sprintf("k%d-shards", k)
	masters := len(s.c.masters)
	most := (k + masters - 1) / masters
	var name string
	var counts []int
	for i := range maxPlaceTries {
		name = base
		if i > 0 {
			name = base + "-" + strconv.Itoa(i)
		}
		counts = s.placement(name, k)
		if s.o.shardPlacement != placeBalanced || maxOf(counts) <= most {
			break
		}
	}
	return name, counts
}

// placement is how many of queue name's k hash tags each master holds.
func (s *shardBench) placement(name string, k int) []int {
	counts := make([]int, len(s.c.masters))
	for j := range k {
		tag := store.ShardTag(s.ns, name, j)
		slot := int(crc16([]byte(tag[1:len(tag)-1])) % 16384) // the tag's inside
		for m, ranges := range s.c.ranges {
			for _, r := range ranges {
				if slot >= r.start && slot <= r.end {
					counts[m]++
				}
			}
		}
	}
	return counts
}

// crc16 is the CRC-16/XMODEM of Redis Cluster's key slots.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func maxOf(v []int) int {
	most := 0
	for _, x := range v {
		most = max(most, x)
	}
	return most
}

// checkPlacement parses --shard-placement.
func checkPlacement(p string) error {
	switch p {
	case placeBalanced, placeRandom:
		return nil
	}
	return fmt.Errorf("--shard-placement %q: want %s", p, strings.Join([]string{placeBalanced, placeRandom}, " or "))
}
