-- 0016: the last success of every job, from its runs, for the metrics
-- (idemsync_last_success_timestamp_seconds; docs/operations.md, Metrics).
-- Successes before metrics_totals existed, or whose process ended before
-- recording them, left last_success_at NULL or older than the newest run
-- that ended completed or partial (both exit 0): the gauge said 0, or an
-- old time, for a job that succeeded. A job name "file.resource" is
-- resource `resource` of job `file`, as metricsKey splits it.

INSERT INTO metrics_totals (job, resource, last_run_at, last_success_at)
SELECT CASE WHEN instr(job, '.') > 0 THEN substr(job, 1, instr(job, '.') - 1) ELSE job END,
       CASE WHEN instr(job, '.') > 0 THEN substr(job, instr(job, '.') + 1) ELSE job END,
       max(finished_at), max(finished_at)
FROM runs
WHERE status IN ('completed', 'partial') AND finished_at IS NOT NULL
GROUP BY job
ON CONFLICT (job, resource) DO UPDATE SET
    last_success_at = excluded.last_success_at,
    last_run_at = CASE WHEN last_run_at = '' OR last_run_at < excluded.last_run_at THEN excluded.last_run_at ELSE last_run_at END
WHERE last_success_at IS NULL OR last_success_at < excluded.last_success_at;
