// API Blueprint -> the compact JSON gatebench's _apib.py reads (stdin -> stdout).
// Parsed by Drafter (npm drafter.js, Apiary's reference parser compiled to JavaScript); this
// script only flattens its API Elements result: resources, actions, parameters, example
// bodies, and the parser's warnings and errors with their character offsets.
"use strict";

const drafter = require("drafter.js");

function text(element) {
  if (element === undefined || element === null) return "";
  if (typeof element === "string") return element;
  if (typeof element.content === "string") return element.content;
  if (typeof element.content === "number" || typeof element.content === "boolean") return String(element.content);
  return "";
}

function offset(element) {
  const maps = element && element.attributes && element.attributes.sourceMap;
  try {
    return maps.content[0].content[0].content[0].content;
  } catch (e) {
    return null;
  }
}

function titleOffset(element) {
  const title = element && element.meta && element.meta.title;
  return offset(title) !== null ? offset(title) : offset(element);
}

function variables(element) {
  const list = element && element.attributes && element.attributes.hrefVariables;
  if (!list || !Array.isArray(list.content)) return [];
  return list.content.map((member) => {
    const flags = ((member.attributes || {}).typeAttributes || {}).content || [];
    const value = (member.content || {}).value;
    const attributes = (value && value.attributes) || {};
    let example = "";
    if (value && typeof value.content === "string") example = value.content;
    else if (value && Array.isArray(value.content) && value.content.length) example = text(value.content[0]);
    else if (value && value.element === "enum" && value.content) example = text(value.content);
    const members = (attributes.enumerations || {}).content;
    return {
      name: text((member.content || {}).key),
      type: text((member.meta || {}).title) || "string",
      required: flags.some((f) => text(f) === "required"),
      example,
      // + Members of an enum[T], + Default: of any
      members: Array.isArray(members) ? members.map(text) : [],
      default: attributes.default ? text(attributes.default) : "",
    };
  });
}

function message(element) {
  const headers = ((element.attributes || {}).headers || {}).content || [];
  let contentType = "";
  const others = [];
  for (const header of headers) {
    const key = text((header.content || {}).key);
    const value = text((header.content || {}).value);
    if (key.toLowerCase() === "content-type") contentType = value;
    else others.push([key, value]);
  }
  let body = null;
  for (const item of element.content || []) {
    const classes = ((item.meta || {}).classes || {}).content || [];
    if (item.element === "asset" && classes.some((c) => text(c) === "messageBody")) {
      body = typeof item.content === "string" ? item.content : null;
      contentType = contentType || text((item.attributes || {}).contentType);
    }
  }
  return { contentType, body, headers: others };
}

function actions(resource) {
  const out = [];
  for (const transition of resource.content || []) {
    if (transition.element !== "transition") continue;
    const action = {
      title: text((transition.meta || {}).title),
      href: text((transition.attributes || {}).href),
      variables: variables(transition),
      offset: titleOffset(transition),
      method: "",
      requests: [],
      responses: [],
    };
    for (const transaction of transition.content || []) {
      if (transaction.element !== "httpTransaction") continue;
      for (const part of transaction.content || []) {
        if (part.element === "httpRequest") {
          action.method = action.method || text((part.attributes || {}).method);
          const href = text((part.attributes || {}).href);
          if (href && !action.href) action.href = href;
          action.requests.push(message(part));
        } else if (part.element === "httpResponse") {
          action.responses.push({ status: text((part.attributes || {}).statusCode), ...message(part) });
        }
      }
    }
    out.push(action);
  }
  return out;
}

function walk(element, out) {
  if (!element || typeof element !== "object") return;
  if (element.element === "resource") {
    out.resources.push({
      title: text((element.meta || {}).title),
      href: text((element.attributes || {}).href),
      variables: variables(element),
      offset: titleOffset(element),
      actions: actions(element),
    });
    return;
  }
  if (element.element === "annotation") {
    const classes = ((element.meta || {}).classes || {}).content || [];
    out.annotations.push({
      severity: classes.some((c) => text(c) === "error") ? "error" : "warning",
      message: text(element),
      offset: offset(element),
    });
    return;
  }
  if (Array.isArray(element.content)) element.content.forEach((child) => walk(child, out));
}

let source = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (source += chunk));
process.stdin.on("end", () => {
  const result = drafter.parseSync(source, { requireBlueprintName: false, generateSourceMap: true });
  const out = { title: "", host: "", resources: [], annotations: [] };
  for (const element of result.content || []) {
    if (element.element === "category") {
      out.title = text((element.meta || {}).title);
      for (const member of ((element.attributes || {}).metadata || {}).content || []) {
        if (text((member.content || {}).key).toUpperCase() === "HOST") out.host = text((member.content || {}).value);
      }
    }
    walk(element, out);
  }
  process.stdout.write(JSON.stringify(out));
});
