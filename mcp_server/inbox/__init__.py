"""The approval inbox: `/inbox`, web pages for the people whose input tasks wait for.

One concept per module: `session.py` (the signed session cookie), `csrf.py` (form tokens bound
to it), `signin.py` (who is signed in), `login.py` (signing in and out), `security.py` (the
headers of every inbox response), `templating.py` (the Jinja2 templates of `templates/`,
autoescaped: every page and fragment is drawn there), `times.py` (times in words), `forms.py`
(an elicitation form from its requestedSchema, and the answer back), `approval.py` (a decision
as buttons), `timeline.py` (a task's steps as a picture), `outcome.py` (how a task ended),
`decided.py` (the decisions made: who, when, what), `pages.py` (the task pages and fragments),
`list_page.py` and `paging.py` (the list, a page at a time), `responses.py` (error responses),
`events.py` (server-sent events), `routes.py` (the routes, mounted by the app). What it reads
of tasks beside the task store (the waiting tasks, the decisions, a task's start arguments)
comes through `InboxStore` (mcp_server/tasks/inbox_store.py), never from Temporal directly.
"""
