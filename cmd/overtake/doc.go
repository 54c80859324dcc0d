// Command overtake is the command line of Overtake, the Redis priority task
// queue whose runtime preempts running low-priority tasks for urgent ones.
//
//	overtake demo                       # embedded Redis, no setup needed
//	overtake queues                     # the namespace's queues, depths per level
//	overtake enqueue --type email --level high --payload '{"to":"ada@example.com"}'
//	overtake stats [--watch] [--json] [--sla high=10s]
//	overtake pause [--level L] [--preempt]
//	overtake resume [--level L]
//	overtake inspect TASK_ID
//	overtake cancel [--json] TASK_ID...  # a waiting task at once, a running one when its handler returns
//	overtake dead list [--json] | requeue ID... | delete ID...
//	overtake console [--demo]            # the web console on 127.0.0.1:8090
//
// Every command but demo connects with --redis (or REDIS_URL, default
// redis://127.0.0.1:6379) and takes --namespace and --queue (or
// OVERTAKE_NAMESPACE and OVERTAKE_QUEUE). The levels
// and classes of the queue are read from Redis, where its first producer
// or worker recorded them; a command on a queue that has none names the
// queues it found and exits 1. enqueue creates a queue that holds no data
// yet; a queue in use that has no shape (opened only by older versions)
// gets one only from --levels.
package main
