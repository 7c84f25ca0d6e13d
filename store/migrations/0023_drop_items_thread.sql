-- items_thread (source, thread) is a prefix of items_thread_time (source,
-- thread, time), which serves every query it served: one index fewer to
-- write on every insert and about 3.5 MB fewer at 100k mails.
DROP INDEX items_thread;
