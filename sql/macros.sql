-- name: macros
-- reads:
-- Small functions the queries share. v2_type maps v1 event type names to v2 (D-1), and the v1
-- names of the two dispatch events a delegated trajectory reads (E-102); unknown types pass
-- through and are ignored later, never an error. (The macros that read event_scan's `f` by field
-- name, `<type>_field(f, 'name')`, are made from evalbatch/extract/scan_fields.py: E-134.)
CREATE OR REPLACE TEMP MACRO v2_type(t) AS CASE t
    WHEN 'agent.invocation.started' THEN 'agent.invocation-started'
    WHEN 'agent.invocation.completed' THEN 'agent.invocation-completed'
    WHEN 'agent.toolCalled' THEN 'agent.tool-called'
    WHEN 'agent.toolReturned' THEN 'agent.tool-returned'
    WHEN 'core.dispatch.join' THEN 'dispatch.joined'
    WHEN 'core.workflowChain.event' THEN 'workflow-chain.event'
    ELSE t
END;
-- A JSON number's text starts with '-' or a digit (strings, booleans, null, objects and arrays
-- never do), so its type is read off the first character and its value off the text: no parse.
CREATE OR REPLACE TEMP MACRO json_number(v) AS
    CASE WHEN ascii(CAST(v AS VARCHAR)) = 45 OR ascii(CAST(v AS VARCHAR)) BETWEEN 48 AND 57
    THEN TRY_CAST(CAST(v AS VARCHAR) AS DOUBLE) END;
-- A JSON string's value: the text inside the quotes, unescaped by the parser only when needed.
CREATE OR REPLACE TEMP MACRO json_string(v) AS
    CASE WHEN starts_with(CAST(v AS VARCHAR), '"') THEN
        CASE WHEN contains(CAST(v AS VARCHAR), '\') THEN v ->> '$'
        ELSE substr(CAST(v AS VARCHAR), 2, length(CAST(v AS VARCHAR)) - 2) END
    END;
