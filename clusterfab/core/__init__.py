"""The bottom layer: findings and their codes, hints, errors and the shared vocabulary.

Nothing here imports any other part of clusterfab; every other layer may import it.
"""
