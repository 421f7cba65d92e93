#!/bin/sh
# Render the site config from its template, then start nginx in the foreground.
set -e
mkdir -p /var/cache/nginx/app
sed "s|\${BACKEND}|${BACKEND}|g" /etc/nginx/templates/default.conf.template > /etc/nginx/conf.d/default.conf
echo "proxying to ${BACKEND}"
nginx -g 'daemon off;'
