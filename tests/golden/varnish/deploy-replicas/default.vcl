# Varnish 7.1 VCL rendered by gatebench: 3 route(s), pass-through.
# Generated file; re-render instead of editing.
vcl 4.1;

import directors;

probe gatebench_health {
    .url = "/__gatebench__/health";
    .interval = 1s;
    .timeout = 1s;
    .window = 3;
    .threshold = 2;
    .initial = 3;
}

backend r1 {
    .host = "127.0.0.1";
    .port = "9000";
    .connect_timeout = 10s;
    .first_byte_timeout = 300s;
    .between_bytes_timeout = 300s;
    .probe = gatebench_health;
}

backend r2 {
    .host = "127.0.0.1";
    .port = "9001";
    .connect_timeout = 10s;
    .first_byte_timeout = 300s;
    .between_bytes_timeout = 300s;
    .probe = gatebench_health;
}

backend r3 {
    .host = "127.0.0.1";
    .port = "9002";
    .connect_timeout = 10s;
    .first_byte_timeout = 300s;
    .between_bytes_timeout = 300s;
    .probe = gatebench_health;
}

sub vcl_init {
    new gatebench_pool = directors.round_robin();
    gatebench_pool.add_backend(r1);
    gatebench_pool.add_backend(r2);
    gatebench_pool.add_backend(r3);
}

# Method and raw URL -> pass to the backend; first match wins. The routes are checked in
# subroutines of 50, so the C compiler's time grows linearly with the routes.
sub gatebench_routes_0 {
    if (req.method == "POST" && req.url ~ "^/auctions(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/auctions/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "POST" && req.url ~ "^/bid/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
}

sub vcl_recv {
    set req.backend_hint = gatebench_pool.backend();
    call gatebench_routes_0;
    return (synth(404, "Not Found"));
}

# A failed fetch (refused, reset or timed out) of an idempotent request without a
# body goes to the next replica, at most twice.
sub vcl_backend_error {
    if (bereq.retries < 2 && bereq.method ~ "^(GET|HEAD|OPTIONS|TRACE|DELETE)$") {
        return (retry);
    }
}
