# A LocalStack start.d init script: init scripts of that stage run inside LocalStack's own interpreter
# (https://docs.localstack.cloud/references/init-hooks), which is where the S3 journal must hook in.
import sys

sys.path.insert(0, "/opt/sandbox")
from sandbox_s3_journal import install_journal  # noqa: E402

install_journal()
