"""Learning: feedback extraction, objective evaluation, reflection, judges, curator, actionability."""
