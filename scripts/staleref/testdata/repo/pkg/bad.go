package a

// Every reference below is stale.
//
// gone.go
// docs/GONE.md
// old.lua
// deploy.sh
// ci.yaml
// ../shared/DESIGN.md
// TestGone
// BenchmarkGone
// FuzzGone
// ExampleGone
// a.Gone
// Thing.Gone
// Gone.Method
// time.NoSuchFunc
// Gone()
// `gone`
// `Thing.gone`
// [Gone]
// [a.Gone]
// recoverPanic
var bad int
