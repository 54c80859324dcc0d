package a

import "testing"

func TestReal(t *testing.T) {}

func BenchmarkReal(b *testing.B) {}

func FuzzReal(f *testing.F) {}

func ExampleThing() {}
