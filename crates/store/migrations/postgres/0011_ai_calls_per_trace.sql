-- A call is identified by (trace_id, span_id), never by span_id alone (CONTRACT 13): two
-- traces may both have a span "s1", and the second one's call was acknowledged and silently
-- dropped. Keep in step with ../sqlite/.

ALTER TABLE ai_calls DROP CONSTRAINT ai_calls_pkey;
ALTER TABLE ai_calls ADD PRIMARY KEY (tenant_id, trace_id, span_id);
-- Evidence pages walk calls in (started_at, span_id, trace_id) order.
DROP INDEX ai_calls_time;
CREATE INDEX ai_calls_time ON ai_calls (tenant_id, started_at, span_id COLLATE "C", trace_id COLLATE "C");
