"""Evaluation of hold'em policies: baselines, duplicate matches, local best response."""
