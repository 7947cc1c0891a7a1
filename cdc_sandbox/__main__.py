from cdc_sandbox.cli import app

app()
