"""live scores keyed by campaign and judgment

A preference campaign's answers (``preferences``) are numbered apart from the other kinds'
judgments (``judgments``), and both keep their frozen stop-test scores in ``live_scores``: the
key is the campaign and the judgment, not the judgment alone.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29 08:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("live_scores", recreate="auto") as batch:
        batch.drop_constraint("pk_live_scores", type_="primary")
        batch.create_primary_key("pk_live_scores", ["campaign_id", "judgment_id"])


def downgrade() -> None:
    with op.batch_alter_table("live_scores", recreate="auto") as batch:
        batch.drop_constraint("pk_live_scores", type_="primary")
        batch.create_primary_key("pk_live_scores", ["judgment_id"])
