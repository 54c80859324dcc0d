-- unique_release.lua: releases a unique task's uniqueness lock once the
-- task succeeded (Store.ReleaseUnique), only while the task holds it: a
-- lock that expired and was taken by a newer equal task is that task's.
--
-- KEYS[1]  the lock u:<digest> (STRING, its value the holder's ID)
-- ARGV[1]  the task's ID
--
-- Reply: 1 released, 0 when the lock is gone or another task holds it.
--
-- Keys it touches. Declared in KEYS: u:<digest>.

if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
