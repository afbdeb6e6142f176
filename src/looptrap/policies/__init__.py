"""What to do about signals: budgets (hard and soft caps) and the escalation ladder (warn, advise, block, halt).
The loop detectors, the other policies, are in :mod:`looptrap.detectors`."""
