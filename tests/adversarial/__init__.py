"""Hostile inputs and broken machines (issue 22): each case once failed; none may hang, destroy or exit 3."""
