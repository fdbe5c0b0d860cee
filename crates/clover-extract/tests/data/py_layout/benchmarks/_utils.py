def slugify(text):
    return text
