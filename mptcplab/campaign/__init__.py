"""Campaigns: a matrix of labs x targets x repetitions run by the existing engine, one
work item (one lab's scenario set, one repetition, one target) at a time, resumable,
merged per lab and target, and compared side by side (docs/campaigns.md)."""
