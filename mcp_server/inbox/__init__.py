"""The approval inbox: `/inbox`, web pages for the people whose input tasks wait for.

One concept per module: `session.py` (the signed session cookie), `csrf.py` (form tokens bound
to it), `signin.py` (who is signed in), `login.py` (signing in and out), `security.py` (the
headers of every inbox response), `html.py` (escaping and the page shell), `forms.py` (an
elicitation form from its requestedSchema, and the answer back), `timeline.py` (a task's steps
as a picture), `pages.py` (the pages and fragments), `responses.py` (error responses),
`events.py` (server-sent events), `routes.py` (the routes, mounted by the app). The list of
waiting tasks is read by mcp_server/tasks/waiting.py.
"""
