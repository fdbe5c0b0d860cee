from falcon._utils import slugify
