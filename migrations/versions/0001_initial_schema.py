"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-22 03:32:39.217988
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table('campaigns',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('level', sa.String(length=16), nullable=False),
    sa.Column('scale_min', sa.Double(), nullable=True),
    sa.Column('scale_max', sa.Double(), nullable=True),
    sa.Column('categories', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('open', sa.Boolean(), nullable=False),
    sa.Column('strict', sa.Boolean(), nullable=False),
    sa.Column('settings', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("kind IN ('rating', 'label', 'multilabel', 'pairwise')", name=op.f('ck_campaigns_kind')),
    sa.CheckConstraint("level IN ('nominal', 'ordinal', 'interval', 'ratio')", name=op.f('ck_campaigns_level')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_campaigns')),
    sa.UniqueConstraint('name', name=op.f('uq_campaigns_name'))
    )
    op.create_table('campaign_locks',
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('holder', sa.String(length=200), nullable=False),
    sa.Column('acquired_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_campaign_locks_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('campaign_id', name=op.f('pk_campaign_locks'))
    )
    op.create_table('ingest_batches',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('checksum', sa.String(length=64), nullable=False),
    sa.Column('format', sa.String(length=32), nullable=False),
    sa.Column('n_rows', sa.Integer(), nullable=False),
    sa.Column('n_new', sa.Integer(), nullable=False),
    sa.Column('n_duplicate', sa.Integer(), nullable=False),
    sa.Column('n_rejected', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_ingest_batches_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ingest_batches'))
    )
    with op.batch_alter_table('ingest_batches', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ingest_batches_campaign_id'), ['campaign_id'], unique=False)

    op.create_table('items',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=False),
    sa.Column('gold', sa.Text(), nullable=True),
    sa.Column('text', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_items_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_items')),
    sa.UniqueConstraint('campaign_id', 'external_id', name=op.f('uq_items_campaign_id_external_id'))
    )
    op.create_table('metric_runs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('watermark', sa.BigInteger(), nullable=False),
    sa.Column('full', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('parameters', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('code_version', sa.String(length=64), nullable=False),
    sa.Column('n_judgments', sa.Integer(), nullable=False),
    sa.Column('n_new', sa.Integer(), nullable=False),
    sa.Column('seconds', sa.Double(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.CheckConstraint("status IN ('running', 'ok', 'failed')", name=op.f('ck_metric_runs_status')),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_metric_runs_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_metric_runs'))
    )
    with op.batch_alter_table('metric_runs', schema=None) as batch_op:
        batch_op.create_index('ix_metric_runs_campaign_id_id', ['campaign_id', 'id'], unique=False)

    op.create_table('workers',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('weight', sa.Double(), nullable=False),
    sa.Column('platform', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.CheckConstraint("status IN ('ok', 'down_weighted', 'blocked')", name=op.f('ck_workers_status')),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_workers_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workers')),
    sa.UniqueConstraint('campaign_id', 'external_id', name=op.f('uq_workers_campaign_id_external_id'))
    )
    op.create_table('flags',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('scope', sa.String(length=16), nullable=False),
    sa.Column('subject', sa.Text(), nullable=False),
    sa.Column('rule', sa.String(length=64), nullable=False),
    sa.Column('value', sa.Double(), nullable=True),
    sa.Column('threshold', sa.Double(), nullable=True),
    sa.Column('evidence', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.CheckConstraint("scope IN ('campaign', 'worker', 'item', 'pair', 'annotation')", name=op.f('ck_flags_scope')),
    sa.ForeignKeyConstraint(['run_id'], ['metric_runs.id'], name=op.f('fk_flags_run_id_metric_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_flags'))
    )
    with op.batch_alter_table('flags', schema=None) as batch_op:
        batch_op.create_index('ix_flags_run_id_scope', ['run_id', 'scope'], unique=False)

    op.create_table('judgments',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('worker_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('item_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('value_num', sa.Double(), nullable=True),
    sa.Column('value_label', sa.Text(), nullable=True),
    sa.Column('dedup_key', sa.String(length=300), nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('duration_s', sa.Double(), nullable=True),
    sa.Column('batch_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.CheckConstraint('duration_s IS NULL OR duration_s >= 0', name=op.f('ck_judgments_duration')),
    sa.ForeignKeyConstraint(['batch_id'], ['ingest_batches.id'], name=op.f('fk_judgments_batch_id_ingest_batches'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_judgments_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['item_id'], ['items.id'], name=op.f('fk_judgments_item_id_items'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['worker_id'], ['workers.id'], name=op.f('fk_judgments_worker_id_workers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_judgments')),
    sa.UniqueConstraint('campaign_id', 'dedup_key', name=op.f('uq_judgments_campaign_id_dedup_key'))
    )
    with op.batch_alter_table('judgments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judgments_batch_id'), ['batch_id'], unique=False)
        batch_op.create_index('ix_judgments_campaign_id_id', ['campaign_id', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_judgments_item_id'), ['item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_judgments_worker_id'), ['worker_id'], unique=False)

    op.create_table('metric_values',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('scope', sa.String(length=16), nullable=False),
    sa.Column('subject', sa.Text(), nullable=False),
    sa.Column('metric', sa.String(length=64), nullable=False),
    sa.Column('value', sa.Double(), nullable=True),
    sa.Column('low', sa.Double(), nullable=True),
    sa.Column('high', sa.Double(), nullable=True),
    sa.Column('n', sa.BigInteger(), nullable=True),
    sa.Column('detail', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.CheckConstraint("scope IN ('campaign', 'worker', 'item', 'pair', 'annotation')", name=op.f('ck_metric_values_scope')),
    sa.ForeignKeyConstraint(['run_id'], ['metric_runs.id'], name=op.f('fk_metric_values_run_id_metric_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_metric_values'))
    )
    with op.batch_alter_table('metric_values', schema=None) as batch_op:
        batch_op.create_index('ix_metric_values_run_id_scope_metric', ['run_id', 'scope', 'metric'], unique=False)

    op.create_table('preferences',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('worker_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('left_item_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('right_item_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('outcome', sa.String(length=5), nullable=False),
    sa.Column('dedup_key', sa.String(length=300), nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('duration_s', sa.Double(), nullable=True),
    sa.Column('batch_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.CheckConstraint("outcome IN ('left', 'right', 'tie')", name=op.f('ck_preferences_outcome')),
    sa.CheckConstraint('duration_s IS NULL OR duration_s >= 0', name=op.f('ck_preferences_duration')),
    sa.CheckConstraint('left_item_id <> right_item_id', name=op.f('ck_preferences_distinct_items')),
    sa.ForeignKeyConstraint(['batch_id'], ['ingest_batches.id'], name=op.f('fk_preferences_batch_id_ingest_batches'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_preferences_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['left_item_id'], ['items.id'], name=op.f('fk_preferences_left_item_id_items'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['right_item_id'], ['items.id'], name=op.f('fk_preferences_right_item_id_items'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['worker_id'], ['workers.id'], name=op.f('fk_preferences_worker_id_workers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_preferences')),
    sa.UniqueConstraint('campaign_id', 'dedup_key', name=op.f('uq_preferences_campaign_id_dedup_key'))
    )
    with op.batch_alter_table('preferences', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_preferences_batch_id'), ['batch_id'], unique=False)
        batch_op.create_index('ix_preferences_campaign_id_id', ['campaign_id', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_preferences_left_item_id'), ['left_item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_preferences_right_item_id'), ['right_item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_preferences_worker_id'), ['worker_id'], unique=False)

    op.create_table('rejected_rows',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('batch_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('line', sa.Integer(), nullable=True),
    sa.Column('raw', sa.Text(), nullable=False),
    sa.Column('reasons', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.ForeignKeyConstraint(['batch_id'], ['ingest_batches.id'], name=op.f('fk_rejected_rows_batch_id_ingest_batches'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rejected_rows'))
    )
    with op.batch_alter_table('rejected_rows', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rejected_rows_batch_id'), ['batch_id'], unique=False)

    op.create_table('worker_decisions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('campaign_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('worker_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('weight', sa.Double(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('automatic', sa.Boolean(), nullable=False),
    sa.Column('actor', sa.String(length=200), nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('evidence', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("action IN ('block', 'down_weight', 'clear', 'suggest')", name=op.f('ck_worker_decisions_action')),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], name=op.f('fk_worker_decisions_campaign_id_campaigns'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['metric_runs.id'], name=op.f('fk_worker_decisions_run_id_metric_runs'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['worker_id'], ['workers.id'], name=op.f('fk_worker_decisions_worker_id_workers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_worker_decisions'))
    )
    with op.batch_alter_table('worker_decisions', schema=None) as batch_op:
        batch_op.create_index('ix_worker_decisions_campaign_id_worker_id', ['campaign_id', 'worker_id'], unique=False)

    op.create_table('judgment_annotations',
    sa.Column('judgment_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('annotation', sa.String(length=255), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['judgment_id'], ['judgments.id'], name=op.f('fk_judgment_annotations_judgment_id_judgments'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('judgment_id', 'annotation', name=op.f('pk_judgment_annotations'))
    )



def downgrade() -> None:

    op.drop_table('judgment_annotations')
    with op.batch_alter_table('worker_decisions', schema=None) as batch_op:
        batch_op.drop_index('ix_worker_decisions_campaign_id_worker_id')

    op.drop_table('worker_decisions')
    with op.batch_alter_table('rejected_rows', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rejected_rows_batch_id'))

    op.drop_table('rejected_rows')
    with op.batch_alter_table('preferences', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_preferences_worker_id'))
        batch_op.drop_index(batch_op.f('ix_preferences_right_item_id'))
        batch_op.drop_index(batch_op.f('ix_preferences_left_item_id'))
        batch_op.drop_index('ix_preferences_campaign_id_id')
        batch_op.drop_index(batch_op.f('ix_preferences_batch_id'))

    op.drop_table('preferences')
    with op.batch_alter_table('metric_values', schema=None) as batch_op:
        batch_op.drop_index('ix_metric_values_run_id_scope_metric')

    op.drop_table('metric_values')
    with op.batch_alter_table('judgments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_judgments_worker_id'))
        batch_op.drop_index(batch_op.f('ix_judgments_item_id'))
        batch_op.drop_index('ix_judgments_campaign_id_id')
        batch_op.drop_index(batch_op.f('ix_judgments_batch_id'))

    op.drop_table('judgments')
    with op.batch_alter_table('flags', schema=None) as batch_op:
        batch_op.drop_index('ix_flags_run_id_scope')

    op.drop_table('flags')
    op.drop_table('workers')
    with op.batch_alter_table('metric_runs', schema=None) as batch_op:
        batch_op.drop_index('ix_metric_runs_campaign_id_id')

    op.drop_table('metric_runs')
    op.drop_table('items')
    with op.batch_alter_table('ingest_batches', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ingest_batches_campaign_id'))

    op.drop_table('ingest_batches')
    op.drop_table('campaign_locks')
    op.drop_table('campaigns')

