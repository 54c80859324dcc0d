package a

// Nothing here is stale.
//
// Files: README.md, scripts/run.sh, run.sh, cfg.yml, ./a.go, pkg/a.go,
// docs/future.md (allowed), https://example.com/x.md, pkg.go.dev, the
// *_test.go files, a _test.go file.
//
// Tests: TestReal, BenchmarkReal, FuzzReal, ExampleThing, TestRe*.
//
// Go names: a.Thing, a.Thing.Do, Thing.Field, Thing.Deep (embedded),
// Thing.Do(), helper(), `helper`, `Thing`, [Thing], [a.Thing], [Thing.Do],
// [*Thing], time.Now, context.Context, redis.Nil, redis.Anything (a
// dependency), `ctx`, `nil`, `LMPOP`, t.Field (a variable), len(),
// `push_pending` (a Lua name in a string), [link](https://example.com),
// a Markdown link definition [Ref]: https://example.com, GitHub,
// a.Deep (in package a, a variable named a), list.Front (a variable
// named like a standard library package).
//
// A code example may use names of its own:
//
//	userFunc(t)
var good int

func use(list struct{ Front int }) int { return list.Front }
