// Package console serves a web view of an Overtake queue and its fleet:
// per level depth, waits, rates and pauses with small charts of the last
// minutes, the running tasks, the preemption feed (urgent task → victim,
// how long each waited and gave way, whether a checkpoint was saved, when
// the victim resumed), one task's record, the pending lists and the
// dead letters.
//
// Pages are rendered on the server with html/template, so every task field
// (payloads are user data) is escaped; one small embedded script keeps
// them live over server-sent events. There is no build step and nothing
// is loaded from another origin.
//
// The console is read-only unless [Options].AllowActions is set; actions
// (pause, resume, requeue or delete a dead letter, cancel a task) are POST
// requests that carry [Options].Token in the X-Overtake-Token header or
// the token form field, and cross-origin requests are refused
// (net/http.CrossOriginProtection).
//
// Reads are guarded too: the console answers only requests whose Host is
// localhost, an IP address or one of [Options].AllowedHosts, and 421
// Misdirected Request to any other, so that a web page the operator visits
// cannot read the queue by making its own name resolve to the console's
// address (DNS rebinding). Mounted under a public name, list that name.
//
// Mount it in a server of your own:
//
//	c, err := console.New(q, console.Options{})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	mux.Handle("/console/", http.StripPrefix("/console", c))
//
// The command `overtake console` serves it on 127.0.0.1.
package console
