from sandbox.cli import app

app()
