#!/usr/bin/env python3
# lambda_api.py - a stand-in for AWS Lambda's Runtime API (2018-06-01), for
# tests/60-faas.bats: no Lambda emulator can be installed here.
#
#   lambda_api.py DIR EVENT...
#
# Serves on 127.0.0.1 (a free port, written to DIR/port) the documented
# endpoints a custom runtime calls, and checks every request against the
# documentation:
#   GET  /2018-06-01/runtime/invocation/next  -> the next EVENT (its bytes
#        as the body) with Lambda-Runtime-Aws-Request-Id (req-1, req-2,
#        ...), -Deadline-Ms, -Invoked-Function-Arn and -Trace-Id; once the
#        events are used up it never answers (as Lambda, which freezes the
#        runtime there), unless QUEUE (env) names a directory: the
#        events after the EVENTs are then the files QUEUE/1, QUEUE/2, ...
#        each given once it appears, as invocations come in (write it
#        elsewhere and rename it there).  The first one is held for HOLD
#        seconds (env, default 0): a runtime with a timeout on /next
#        would give up.
#   POST /2018-06-01/runtime/invocation/<id>/response  -> 202; the body
#        into DIR/<id>.response
#   POST /2018-06-01/runtime/invocation/<id>/error     -> 202; needs the
#        header Lambda-Runtime-Function-Error-Type and a JSON body with
#        errorMessage and errorType strings; into DIR/<id>.error (and
#        DIR/<id>.error-type)
#   POST /2018-06-01/runtime/init/error                 -> 202, the same
#        checks; into DIR/init.error
# Every request is logged in DIR/requests as "METHOD PATH"; whatever breaks
# the protocol (an unknown path or id, an id answered twice or before it
# was given, a /next while an invocation is unanswered, a missing header or
# a bad error body) is logged in DIR/violations and answered 400.
import http.server
import json
import os
import sys
import threading
import time

BASE = '/2018-06-01/runtime'
DIR = sys.argv[1]
EVENTS = [e.encode() for e in sys.argv[2:]]
HOLD = float(os.environ.get('HOLD', '0'))
QUEUE = os.environ.get('QUEUE')
lock = threading.Lock()
state = {'given': 0, 'open': None, 'answered': set()}


def log(name, line):
    with open(os.path.join(DIR, name), 'a') as f:
        f.write(line + '\n')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def reply(self, code, body=b'', headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def bad(self, why):
        log('violations', '%s %s: %s' % (self.command, self.path, why))
        self.reply(400, json.dumps({'errorMessage': why,
                                    'errorType': 'InvalidRequest'}).encode())

    def body(self):
        n = self.headers.get('Content-Length')
        if n is None:
            return None
        return self.rfile.read(int(n))

    def do_GET(self):
        log('requests', 'GET ' + self.path)
        if self.path != BASE + '/invocation/next':
            return self.bad('unknown path')
        with lock:
            if state['open'] is not None:
                return self.bad('next before %s was answered' %
                                state['open'])
            n = state['given']
            if n >= len(EVENTS):
                ev = None
            else:
                state['given'] = n + 1
                ev = EVENTS[n]
                rid = 'req-%d' % (n + 1)
                state['open'] = rid
        if ev is None and QUEUE:    # the next invocation, when it comes
            path = os.path.join(QUEUE, str(n - len(EVENTS) + 1))
            while not os.path.exists(path):
                time.sleep(0.02)
            with open(path, 'rb') as f:
                ev = f.read()
            with lock:
                state['given'] = n + 1
                rid = 'req-%d' % (n + 1)
                state['open'] = rid
        if ev is None:
            while True:             # frozen, as Lambda freezes it
                time.sleep(3600)
        if n == 0 and HOLD > 0:
            time.sleep(HOLD)
        self.reply(200, ev, [
            ('Content-Type', 'application/json'),
            ('Lambda-Runtime-Aws-Request-Id', rid),
            ('Lambda-Runtime-Deadline-Ms',
             str(int(time.time() * 1000) + 60000)),
            ('Lambda-Runtime-Invoked-Function-Arn',
             'arn:aws:lambda:eu-west-1:000000000000:function:spirt-grad'),
            ('Lambda-Runtime-Trace-Id', 'Root=1-00000000-%024d' % n)])

    def error_doc(self, b):
        et = self.headers.get('Lambda-Runtime-Function-Error-Type')
        if not et:
            return None, 'no Lambda-Runtime-Function-Error-Type header'
        try:
            d = json.loads(b)
        except ValueError:
            return None, 'error body is not JSON'
        if not isinstance(d, dict) or \
                not isinstance(d.get('errorMessage'), str) or \
                not isinstance(d.get('errorType'), str):
            return None, 'error body lacks errorMessage or errorType'
        if d['errorType'] != et:
            return None, 'errorType differs from the header'
        return d, None

    def do_POST(self):
        log('requests', 'POST ' + self.path)
        b = self.body()
        if b is None:
            return self.bad('no Content-Length')
        if self.path == BASE + '/init/error':
            d, why = self.error_doc(b)
            if why:
                return self.bad(why)
            with open(os.path.join(DIR, 'init.error'), 'wb') as f:
                f.write(b)
            return self.reply(202, b'{"status":"OK"}')
        pre = BASE + '/invocation/'
        if not self.path.startswith(pre):
            return self.bad('unknown path')
        rid, _, what = self.path[len(pre):].partition('/')
        if what not in ('response', 'error'):
            return self.bad('unknown path')
        with lock:
            if rid != state['open']:
                return self.bad('id %s not the open invocation (%s)' %
                                (rid, state['open']))
        if what == 'error':
            d, why = self.error_doc(b)
            if why:
                return self.bad(why)
        with lock:
            state['open'] = None
            state['answered'].add(rid)
        with open(os.path.join(DIR, rid + '.' + what), 'wb') as f:
            f.write(b)
        with open(os.path.join(DIR, rid + '.type'), 'w') as f:
            f.write('%s\n' % self.headers.get('Content-Type'))
        self.reply(202, b'{"status":"OK"}')


srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
srv.daemon_threads = True
with open(os.path.join(DIR, 'port.tmp'), 'w') as f:
    f.write('%d\n' % srv.server_address[1])
os.rename(os.path.join(DIR, 'port.tmp'), os.path.join(DIR, 'port'))
srv.serve_forever()
