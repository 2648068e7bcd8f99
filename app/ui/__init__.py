"""The owner's page (`/ui/`): what the person who runs the server needs to watch an agent
and undo its work, in a browser. docs/owner-page.md says what it shows and how it holds
against what it shows; `pages.build_ui` is the app, mounted by `app.http.factory`."""
