"""Tools of this group are added here."""
