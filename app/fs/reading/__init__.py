"""Reading: what the read tools answer. A text file's lines, head or tail within the byte
budget, with the hash an edit will need (`read.py`); a directory listing, flat or recursive,
paged and cut visibly (`listing.py`); images and other media as base64 within their cap
(`media.py`). Every file is opened through `Root`; nothing here writes."""
