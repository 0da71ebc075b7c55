"""The approval inbox: `/inbox`, web pages for the people whose input tasks wait for.

One concept per module: `session.py` (the signed sign-in cookie), `csrf.py` (form tokens bound
to it), `security.py` (the headers of every inbox response), `html.py` (escaping and the page
shell), `forms.py` (an elicitation form from its requestedSchema, and the answer back),
`timeline.py` (a task's steps as a picture), `pages.py` (the pages), `events.py` (server-sent
events), `routes.py` (the routes, mounted by the app).
"""
