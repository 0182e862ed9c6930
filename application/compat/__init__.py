"""Front ends that give other memory libraries' method shapes over this store (issue 31)."""
