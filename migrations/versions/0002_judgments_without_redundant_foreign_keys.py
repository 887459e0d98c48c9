"""judgments without redundant foreign keys

The campaign and batch keys of judgments and preferences are implied by the worker and item
keys; as foreign keys they cost a trigger per inserted row. The columns and indexes stay.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 04:12:19.952412
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    with op.batch_alter_table('judgments', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_judgments_batch_id_ingest_batches'), type_='foreignkey')
        batch_op.drop_constraint(batch_op.f('fk_judgments_campaign_id_campaigns'), type_='foreignkey')

    with op.batch_alter_table('preferences', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_preferences_batch_id_ingest_batches'), type_='foreignkey')
        batch_op.drop_constraint(batch_op.f('fk_preferences_campaign_id_campaigns'), type_='foreignkey')


def downgrade() -> None:

    with op.batch_alter_table('preferences', schema=None) as batch_op:
        batch_op.create_foreign_key(batch_op.f('fk_preferences_campaign_id_campaigns'), 'campaigns', ['campaign_id'], ['id'], ondelete='CASCADE')
        batch_op.create_foreign_key(batch_op.f('fk_preferences_batch_id_ingest_batches'), 'ingest_batches', ['batch_id'], ['id'], ondelete='SET NULL')

    with op.batch_alter_table('judgments', schema=None) as batch_op:
        batch_op.create_foreign_key(batch_op.f('fk_judgments_campaign_id_campaigns'), 'campaigns', ['campaign_id'], ['id'], ondelete='CASCADE')
        batch_op.create_foreign_key(batch_op.f('fk_judgments_batch_id_ingest_batches'), 'ingest_batches', ['batch_id'], ['id'], ondelete='SET NULL')


